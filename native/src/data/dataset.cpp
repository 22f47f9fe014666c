#include "data/dataset.h"

#include <cmath>
#include <cstring>

#include "core/errors.h"

namespace tb {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::U8: return "uint8";
    case DType::I32: return "int32";
    case DType::F16: return "float16";
    case DType::F32: return "float32";
  }
  return "unknown";
}

DType parse_dtype(const std::string& name) {
  if (name == "uint8") return DType::U8;
  if (name == "int32") return DType::I32;
  if (name == "float16") return DType::F16;
  if (name == "float32") return DType::F32;
  TB_THROW(ErrorCode::BadInput, "dtype '" + name + "' is not supported: use uint8, int32, float16 or float32");
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::U8: return 1;
    case DType::F16: return 2;
    case DType::I32:
    case DType::F32: return 4;
  }
  return 1;
}

std::int64_t Field::record_values() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  std::uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      int e = -1;
      std::uint32_t m = mant;
      do {
        ++e;
        m <<= 1;
      } while ((m & 0x400u) == 0);
      bits = sign | ((127 - 15 - e) << 23) | ((m & 0x3FFu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void Dataset::add_field(const std::string& name, Field field, std::int64_t count) {
  if (count <= 0) TB_THROW(ErrorCode::BadInput, "field '" + name + "' has no records");
  if (count_ >= 0 && count != count_) {
    TB_THROW(ErrorCode::BadInput, "field '" + name + "' has " + std::to_string(count) + " records but the other fields have " +
                                      std::to_string(count_) + ": fields must have the same length");
  }
  for (auto d : field.shape)
    if (d <= 0) TB_THROW(ErrorCode::BadInput, "field '" + name + "' has a non-positive dimension " + std::to_string(d));
  const std::int64_t values = field.record_values();
  const std::int64_t expected = count * values * dtype_bytes(field.dtype);
  if (static_cast<std::int64_t>(field.bytes.size()) != expected) {
    TB_THROW(ErrorCode::BadInput, "field '" + name + "' holds " + std::to_string(field.bytes.size()) + " bytes but " +
                                      std::to_string(count) + " records of " + std::to_string(values) + " " +
                                      dtype_name(field.dtype) + " values need " + std::to_string(expected));
  }
  if (field.dtype == DType::F32 || field.dtype == DType::F16) {
    const std::int64_t n = count * values;
    for (std::int64_t i = 0; i < n; ++i) {
      float v;
      if (field.dtype == DType::F32) std::memcpy(&v, field.bytes.data() + 4 * i, 4);
      else {
        std::uint16_t h;
        std::memcpy(&h, field.bytes.data() + 2 * i, 2);
        v = half_to_float(h);
      }
      if (!std::isfinite(v)) {
        TB_THROW(ErrorCode::BadInput, "field '" + name + "' has " + (std::isnan(v) ? "NaN" : "an infinite value") +
                                          " at record " + std::to_string(i / values) + ", value " + std::to_string(i % values));
      }
    }
  }
  count_ = count;
  fields_[name] = std::move(field);
}

const Field& Dataset::field(const std::string& name) const {
  auto it = fields_.find(name);
  if (it == fields_.end()) TB_THROW(ErrorCode::BadInput, "the dataset has no field '" + name + "' (the model needs it)");
  return it->second;
}

void Dataset::gather_float(const std::string& name, const std::int64_t* idx, int n, float* out) const {
  const Field& f = field(name);
  const std::int64_t rv = f.record_values();
  for (int r = 0; r < n; ++r) {
    const std::int64_t base = idx[r] * rv;
    float* o = out + static_cast<std::int64_t>(r) * rv;
    switch (f.dtype) {
      case DType::U8: {
        const std::uint8_t* s = f.bytes.data() + base;
        for (std::int64_t i = 0; i < rv; ++i) o[i] = s[i] * f.scale + f.offset;
        break;
      }
      case DType::F32: {
        std::memcpy(o, f.bytes.data() + 4 * base, static_cast<size_t>(4 * rv));
        if (f.scale != 1.0f || f.offset != 0.0f)
          for (std::int64_t i = 0; i < rv; ++i) o[i] = o[i] * f.scale + f.offset;
        break;
      }
      case DType::F16: {
        const std::uint8_t* s = f.bytes.data() + 2 * base;
        for (std::int64_t i = 0; i < rv; ++i) {
          std::uint16_t h;
          std::memcpy(&h, s + 2 * i, 2);
          o[i] = half_to_float(h) * f.scale + f.offset;
        }
        break;
      }
      case DType::I32: {
        const std::uint8_t* s = f.bytes.data() + 4 * base;
        for (std::int64_t i = 0; i < rv; ++i) {
          std::int32_t v;
          std::memcpy(&v, s + 4 * i, 4);
          o[i] = static_cast<float>(v) * f.scale + f.offset;
        }
        break;
      }
    }
  }
}

void Dataset::gather_labels(const std::string& name, const std::int64_t* idx, int n, std::int32_t* out) const {
  const Field& f = field(name);
  if (f.record_values() != 1 || (f.dtype != DType::U8 && f.dtype != DType::I32)) {
    TB_THROW(ErrorCode::BadInput, "field '" + name + "' must hold one integer label per record (uint8 or int32) for classification");
  }
  for (int r = 0; r < n; ++r) {
    if (f.dtype == DType::U8) out[r] = f.bytes[static_cast<size_t>(idx[r])];
    else std::memcpy(out + r, f.bytes.data() + 4 * idx[r], 4);
  }
}

}  // namespace tb
