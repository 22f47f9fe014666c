// The "uncached" path: records read straight from the source files with a
// positioned read per record, as a training script reading .npy dumps or raw
// arrays would. Used to show what the cache buys.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/json.h"
#include "data/files.h"
#include "data/record_source.h"

namespace tb {

// Layout JSON: {"records": N, "fields": [{name, dtype, shape, file, byteOffset,
// byteStride, bigEndian?, normalize?}]}: record i of a field is at
// byteOffset + i * byteStride in its file.
class RawSource : public RecordSource {
 public:
  explicit RawSource(const Json& layout);
  std::int64_t count() const override { return records_; }
  const std::vector<FieldInfo>& fields() const override { return fields_; }
  void read(int f, const std::int64_t* idx, int n, std::uint8_t* out) const override;
  std::string describe() const override { return "source files (uncached)"; }

 private:
  struct Layout {
    std::shared_ptr<FileReader> file;
    std::int64_t offset = 0, stride = 0;
    bool big_endian = false;
  };
  std::int64_t records_ = 0;
  std::vector<Layout> layouts_;
};

}  // namespace tb
