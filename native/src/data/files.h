// Read-only file access the loaders need: whole-file memory maps (cache
// shards) and positioned reads (raw source files), on POSIX and Windows.
#pragma once
#include <cstdint>
#include <string>

namespace tb {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws E_DATA naming the path
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const std::uint8_t* data() const { return data_; }
  std::int64_t size() const { return size_; }

 private:
  const std::uint8_t* data_ = nullptr;
  std::int64_t size_ = 0;
  void* handle_ = nullptr;  // Windows mapping handle
};

class FileReader {
 public:
  explicit FileReader(const std::string& path);  // throws E_BAD_INPUT naming the path
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;
  std::int64_t size() const { return size_; }
  // Reads exactly n bytes at offset (thread-safe); throws E_DATA on a short read.
  void read_at(std::int64_t offset, std::int64_t n, std::uint8_t* out) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::int64_t size_ = 0;
  std::intptr_t fd_ = -1;
};

}  // namespace tb
