// A dataset cache (docs/cache-format.md) opened for reading: every shard
// memory-mapped, its header and size checked against the manifest.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/json.h"
#include "data/files.h"
#include "data/record_source.h"

namespace tb {

constexpr int kCacheFormatVersion = 1;
constexpr char kShardMagic[8] = {'T', 'B', 'S', 'H', 'A', 'R', 'D', '\0'};
constexpr int kShardHeaderBytes = 64;

class CacheSource : public RecordSource {
 public:
  // Throws E_DATA saying exactly what is wrong (missing manifest, future
  // version, a shard whose size or header does not match).
  explicit CacheSource(const std::string& dir);
  std::int64_t count() const override { return records_; }
  const std::vector<FieldInfo>& fields() const override { return fields_; }
  void read(int f, const std::int64_t* idx, int n, std::uint8_t* out) const override;
  std::string describe() const override { return "cache " + dir_; }

 private:
  struct Shard {
    std::unique_ptr<MappedFile> file;
    std::int64_t records = 0;
    std::vector<std::int64_t> field_offsets;
  };
  std::string dir_;
  std::int64_t records_ = 0, records_per_shard_ = 0;
  std::vector<Shard> shards_;
};

// Parses a field list ([{name, dtype, shape, normalize?}]) shared by manifests and raw layouts.
std::vector<FieldInfo> parse_fields(const Json& fields, const std::string& where);

}  // namespace tb
