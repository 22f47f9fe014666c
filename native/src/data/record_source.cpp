#include "data/record_source.h"

#include <cmath>
#include <cstring>

#include "core/errors.h"

namespace tb {

std::int64_t FieldInfo::record_values() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

int RecordSource::field_index(const std::string& name) const {
  for (size_t i = 0; i < fields().size(); ++i)
    if (fields()[i].name == name) return static_cast<int>(i);
  return -1;
}

const FieldInfo& RecordSource::field(const std::string& name) const {
  const int i = field_index(name);
  if (i < 0) {
    std::string names;
    for (const auto& f : fields()) names += (names.empty() ? "" : ", ") + f.name;
    TB_THROW(ErrorCode::BadInput, describe() + " has no field '" + name + "' (it has: " + names + ")");
  }
  return fields()[static_cast<size_t>(i)];
}

void RecordSource::set_scale(const std::string& name, float scale, float offset) {
  const int i = field_index(name);
  if (i < 0) TB_THROW(ErrorCode::BadInput, "cannot normalise missing field '" + name + "'");
  fields_[static_cast<size_t>(i)].scale = scale;
  fields_[static_cast<size_t>(i)].offset = offset;
}

void check_finite(const FieldInfo& f, const std::uint8_t* bytes, std::int64_t records) {
  if (f.dtype != DType::F16 && f.dtype != DType::F32 && f.dtype != DType::F64) return;
  const std::int64_t values = f.record_values(), n = records * values;
  const int w = dtype_bytes(f.dtype);
  for (std::int64_t i = 0; i < n; ++i) {
    double v;
    if (f.dtype == DType::F32) {
      float x;
      std::memcpy(&x, bytes + 4 * i, 4);
      v = x;
    } else if (f.dtype == DType::F64) {
      std::memcpy(&v, bytes + 8 * i, 8);
    } else {
      std::uint16_t h;
      std::memcpy(&h, bytes + static_cast<std::int64_t>(w) * i, 2);
      v = half_to_float(h);
    }
    if (!std::isfinite(v)) {
      TB_THROW(ErrorCode::BadInput, "field '" + f.name + "' has " + (std::isnan(v) ? "NaN" : "an infinite value") +
                                        " at record " + std::to_string(i / values) + ", value " + std::to_string(i % values));
    }
  }
}

void MemorySource::add_field(FieldInfo info, std::vector<std::uint8_t> bytes, std::int64_t count) {
  const std::string& name = info.name;
  if (count <= 0) TB_THROW(ErrorCode::BadInput, "field '" + name + "' has no records");
  if (count_ >= 0 && count != count_) {
    TB_THROW(ErrorCode::BadInput, "field '" + name + "' has " + std::to_string(count) + " records but the other fields have " +
                                      std::to_string(count_) + ": fields must have the same length");
  }
  for (auto d : info.shape)
    if (d <= 0) TB_THROW(ErrorCode::BadInput, "field '" + name + "' has a non-positive dimension " + std::to_string(d));
  const std::int64_t expected = count * info.record_bytes();
  if (static_cast<std::int64_t>(bytes.size()) != expected) {
    TB_THROW(ErrorCode::BadInput, "field '" + name + "' holds " + std::to_string(bytes.size()) + " bytes but " +
                                      std::to_string(count) + " records of " + std::to_string(info.record_values()) + " " +
                                      dtype_name(info.dtype) + " values need " + std::to_string(expected));
  }
  if (field_index(name) >= 0) TB_THROW(ErrorCode::BadInput, "field '" + name + "' is given twice");
  check_finite(info, bytes.data(), count);
  count_ = count;
  fields_.push_back(std::move(info));
  data_.push_back(std::move(bytes));
}

void MemorySource::read(int f, const std::int64_t* idx, int n, std::uint8_t* out) const {
  const std::int64_t rb = fields_[static_cast<size_t>(f)].record_bytes();
  const std::uint8_t* base = data_[static_cast<size_t>(f)].data();
  for (int r = 0; r < n; ++r) std::memcpy(out + r * rb, base + idx[r] * rb, static_cast<size_t>(rb));
}

}  // namespace tb
