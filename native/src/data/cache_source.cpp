#include "data/cache_source.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "core/errors.h"
#include "core/file_path.h"

namespace tb {
namespace {

[[noreturn]] void bad(const std::string& where, const std::string& what) { TB_THROW(ErrorCode::Data, where + ": " + what); }

std::int64_t int_member(const Json& obj, const char* key, const std::string& where) {
  const Json* v = obj.find(key);
  if (!v || !v->is_number() || v->number() < 0) bad(where, std::string("missing or invalid \"") + key + "\"");
  return static_cast<std::int64_t>(v->number());
}

std::uint64_t le64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
std::uint32_t le32(const std::uint8_t* p) { return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<std::uint32_t>(p[3]) << 24); }

}  // namespace

std::vector<FieldInfo> parse_fields(const Json& fields, const std::string& where) {
  if (!fields.is_array() || fields.items().empty()) bad(where, "\"fields\" must be a non-empty array");
  std::vector<FieldInfo> out;
  for (const Json& f : fields.items()) {
    FieldInfo info;
    const Json* name = f.find("name");
    const Json* dtype = f.find("dtype");
    const Json* shape = f.find("shape");
    if (!name || !name->is_string() || !dtype || !dtype->is_string() || !shape || !shape->is_array())
      bad(where, "each field needs a name, a dtype and a shape");
    info.name = name->string();
    info.dtype = parse_dtype(dtype->string());
    for (const Json& d : shape->items()) {
      if (!d.is_number() || d.number() < 1) bad(where, "field '" + info.name + "' has a bad dimension " + d.dump());
      info.shape.push_back(static_cast<std::int64_t>(d.number()));
    }
    if (const Json* norm = f.find("normalize")) {
      const Json* s = norm->find("scale");
      const Json* o = norm->find("offset");
      if (s && s->is_number()) info.scale = static_cast<float>(s->number());
      if (o && o->is_number()) info.offset = static_cast<float>(o->number());
    }
    out.push_back(std::move(info));
  }
  return out;
}

CacheSource::CacheSource(const std::string& dir) : dir_(dir) {
  const std::string manifest_path = dir + "/manifest.json";
  std::ifstream in(fs_path(manifest_path), std::ios::binary);
  if (!in) bad(dir, "no manifest.json (not a dataset cache, or a build that never finished)");
  std::stringstream ss;
  ss << in.rdbuf();
  Json m;
  try {
    m = Json::parse(ss.str());
  } catch (const Error& e) {
    bad(manifest_path, std::string("is not valid JSON: ") + e.what());
  }
  const Json* format = m.find("format");
  if (!format || !format->is_string() || format->string() != "trainbench-cache") bad(manifest_path, "is not a Trainbench cache manifest");
  const std::int64_t version = int_member(m, "formatVersion", manifest_path);
  if (version > kCacheFormatVersion) {
    bad(manifest_path, "was written by a newer Trainbench (cache format " + std::to_string(version) + "; this one reads " +
                           std::to_string(kCacheFormatVersion) + "): update Trainbench or rebuild the cache");
  }
  records_ = int_member(m, "records", manifest_path);
  records_per_shard_ = int_member(m, "recordsPerShard", manifest_path);
  if (records_per_shard_ < 1) bad(manifest_path, "recordsPerShard must be at least 1");
  fields_ = parse_fields(m.find("fields") ? *m.find("fields") : Json(), manifest_path);
  const Json* shards = m.find("shards");
  if (!shards || !shards->is_array()) bad(manifest_path, "missing \"shards\"");
  std::int64_t total = 0;
  for (size_t s = 0; s < shards->items().size(); ++s) {
    const Json& js = shards->items()[s];
    const Json* file = js.find("file");
    if (!file || !file->is_string() || file->string().find('/') != std::string::npos || file->string().find('\\') != std::string::npos)
      bad(manifest_path, "shard " + std::to_string(s) + " has no plain file name");
    const std::string path = dir + "/" + file->string();
    Shard shard;
    shard.records = int_member(js, "records", manifest_path);
    const std::int64_t bytes = int_member(js, "bytes", manifest_path);
    const bool last = s + 1 == shards->items().size();
    if (!last && shard.records != records_per_shard_)
      bad(file->string(), "holds " + std::to_string(shard.records) + " records; every shard but the last must hold " + std::to_string(records_per_shard_));
    const Json* offsets = js.find("fieldOffsets");
    if (!offsets || !offsets->is_array() || offsets->items().size() != fields_.size())
      bad(file->string(), "needs one field offset per field");
    shard.file = std::make_unique<MappedFile>(path);
    if (shard.file->size() != bytes)
      bad(file->string(), "is " + std::to_string(shard.file->size()) + " bytes but the manifest says " + std::to_string(bytes) + " (truncated or replaced)");
    const std::uint8_t* h = shard.file->data();
    if (bytes < kShardHeaderBytes || std::memcmp(h, kShardMagic, 8) != 0) bad(file->string(), "has no shard header (bad magic)");
    if (le32(h + 8) > static_cast<std::uint32_t>(kCacheFormatVersion)) bad(file->string(), "is from a newer cache format");
    if (le32(h + 12) != s) bad(file->string(), "says it is shard " + std::to_string(le32(h + 12)) + ", expected " + std::to_string(s));
    if (static_cast<std::int64_t>(le64(h + 16)) != shard.records) bad(file->string(), "header record count disagrees with the manifest");
    for (size_t f = 0; f < fields_.size(); ++f) {
      const std::int64_t off = static_cast<std::int64_t>(offsets->items()[f].number());
      if (off % 64 != 0 || off < kShardHeaderBytes || off + shard.records * fields_[f].record_bytes() > bytes)
        bad(file->string(), "field '" + fields_[f].name + "' lies outside the shard or is not 64-byte aligned");
      shard.field_offsets.push_back(off);
    }
    total += shard.records;
    shards_.push_back(std::move(shard));
  }
  if (total != records_) bad(manifest_path, "shards hold " + std::to_string(total) + " records, manifest says " + std::to_string(records_));
}

void CacheSource::read(int f, const std::int64_t* idx, int n, std::uint8_t* out) const {
  const std::int64_t rb = fields_[static_cast<size_t>(f)].record_bytes();
  for (int r = 0; r < n; ++r) {
    const std::int64_t i = idx[r];
    const Shard& s = shards_[static_cast<size_t>(i / records_per_shard_)];
    const std::uint8_t* src = s.file->data() + s.field_offsets[static_cast<size_t>(f)] + (i % records_per_shard_) * rb;
    std::memcpy(out + r * rb, src, static_cast<size_t>(rb));
  }
}

}  // namespace tb
