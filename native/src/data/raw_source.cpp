#include "data/raw_source.h"

#include <algorithm>
#include <map>

#include "core/errors.h"
#include "data/cache_source.h"

namespace tb {

RawSource::RawSource(const Json& layout) {
  const Json* records = layout.find("records");
  if (!records || !records->is_number() || records->number() < 1) TB_THROW(ErrorCode::BadInput, "raw layout needs a positive \"records\"");
  records_ = static_cast<std::int64_t>(records->number());
  const Json* fields = layout.find("fields");
  fields_ = parse_fields(fields ? *fields : Json(), "raw layout");
  std::map<std::string, std::shared_ptr<FileReader>> open;
  for (size_t i = 0; i < fields_.size(); ++i) {
    const Json& f = fields->items()[i];
    const Json* file = f.find("file");
    const Json* off = f.find("byteOffset");
    const Json* stride = f.find("byteStride");
    if (!file || !file->is_string() || !off || !off->is_number() || !stride || !stride->is_number())
      TB_THROW(ErrorCode::BadInput, "raw layout field '" + fields_[i].name + "' needs file, byteOffset and byteStride");
    Layout l;
    auto& reader = open[file->string()];
    if (!reader) reader = std::make_shared<FileReader>(file->string());
    l.file = reader;
    l.offset = static_cast<std::int64_t>(off->number());
    l.stride = static_cast<std::int64_t>(stride->number());
    const Json* be = f.find("bigEndian");
    l.big_endian = be && be->is_bool() && be->boolean();
    const std::int64_t end = l.offset + (records_ - 1) * l.stride + fields_[i].record_bytes();
    if (l.stride < fields_[i].record_bytes() || end > l.file->size()) {
      TB_THROW(ErrorCode::Data, file->string() + " is " + std::to_string(l.file->size()) + " bytes but " + std::to_string(records_) +
                                    " records of field '" + fields_[i].name + "' need " + std::to_string(end));
    }
    layouts_.push_back(l);
  }
}

void RawSource::read(int f, const std::int64_t* idx, int n, std::uint8_t* out) const {
  const Layout& l = layouts_[static_cast<size_t>(f)];
  const std::int64_t rb = fields_[static_cast<size_t>(f)].record_bytes();
  const int w = dtype_bytes(fields_[static_cast<size_t>(f)].dtype);
  for (int r = 0; r < n; ++r) {
    std::uint8_t* dst = out + r * rb;
    l.file->read_at(l.offset + idx[r] * l.stride, rb, dst);
    if (l.big_endian && w > 1)
      for (std::int64_t v = 0; v < rb; v += w) std::reverse(dst + v, dst + v + w);
  }
}

}  // namespace tb
