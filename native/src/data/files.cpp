#include "data/files.h"

#include <cerrno>
#include <cstring>

#include "core/errors.h"

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#else
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace tb {

#ifdef _WIN32

static std::wstring widen_path(const std::string& s) {
  const int n = MultiByteToWideChar(CP_UTF8, 0, s.c_str(), -1, nullptr, 0);
  std::wstring w(static_cast<size_t>(n), L'\0');
  MultiByteToWideChar(CP_UTF8, 0, s.c_str(), -1, &w[0], n);
  return w;
}

MappedFile::MappedFile(const std::string& path) {
  HANDLE file = CreateFileW(widen_path(path).c_str(), GENERIC_READ, FILE_SHARE_READ, nullptr, OPEN_EXISTING,
                            FILE_ATTRIBUTE_NORMAL, nullptr);
  if (file == INVALID_HANDLE_VALUE) TB_THROW(ErrorCode::Data, "cannot open " + path);
  LARGE_INTEGER size;
  GetFileSizeEx(file, &size);
  size_ = size.QuadPart;
  if (size_ > 0) {
    handle_ = CreateFileMappingW(file, nullptr, PAGE_READONLY, 0, 0, nullptr);
    if (handle_) data_ = static_cast<const std::uint8_t*>(MapViewOfFile(handle_, FILE_MAP_READ, 0, 0, 0));
  }
  CloseHandle(file);
  if (size_ > 0 && !data_) TB_THROW(ErrorCode::Data, "cannot memory-map " + path);
}

MappedFile::~MappedFile() {
  if (data_) UnmapViewOfFile(data_);
  if (handle_) CloseHandle(handle_);
}

FileReader::FileReader(const std::string& path) : path_(path) {
  HANDLE h = CreateFileW(widen_path(path).c_str(), GENERIC_READ, FILE_SHARE_READ, nullptr, OPEN_EXISTING,
                         FILE_ATTRIBUTE_NORMAL, nullptr);
  if (h == INVALID_HANDLE_VALUE) TB_THROW(ErrorCode::BadInput, "cannot open " + path);
  LARGE_INTEGER size;
  GetFileSizeEx(h, &size);
  size_ = size.QuadPart;
  fd_ = reinterpret_cast<std::intptr_t>(h);
}

FileReader::~FileReader() {
  if (fd_ != -1) CloseHandle(reinterpret_cast<HANDLE>(fd_));
}

void FileReader::read_at(std::int64_t offset, std::int64_t n, std::uint8_t* out) const {
  while (n > 0) {
    OVERLAPPED ov{};
    ov.Offset = static_cast<DWORD>(offset & 0xFFFFFFFF);
    ov.OffsetHigh = static_cast<DWORD>(offset >> 32);
    DWORD got = 0;
    const DWORD want = static_cast<DWORD>(n > (1 << 30) ? (1 << 30) : n);
    if (!ReadFile(reinterpret_cast<HANDLE>(fd_), out, want, &got, &ov) || got == 0)
      TB_THROW(ErrorCode::Data, path_ + ": short read at byte " + std::to_string(offset));
    offset += got;
    out += got;
    n -= got;
  }
}

#else

MappedFile::MappedFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) TB_THROW(ErrorCode::Data, "cannot open " + path + ": " + std::strerror(errno));
  struct stat st{};
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    TB_THROW(ErrorCode::Data, "cannot stat " + path);
  }
  size_ = st.st_size;
  if (size_ > 0) {
    void* p = mmap(nullptr, static_cast<size_t>(size_), PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      TB_THROW(ErrorCode::Data, "cannot memory-map " + path + ": " + std::strerror(errno));
    }
    data_ = static_cast<const std::uint8_t*>(p);
  }
  ::close(fd);  // the mapping stays valid
}

MappedFile::~MappedFile() {
  if (data_) munmap(const_cast<std::uint8_t*>(data_), static_cast<size_t>(size_));
}

FileReader::FileReader(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) TB_THROW(ErrorCode::BadInput, "cannot open " + path + ": " + std::strerror(errno));
  struct stat st{};
  fstat(fd, &st);
  size_ = st.st_size;
  fd_ = fd;
}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(static_cast<int>(fd_));
}

void FileReader::read_at(std::int64_t offset, std::int64_t n, std::uint8_t* out) const {
  while (n > 0) {
    const ssize_t got = ::pread(static_cast<int>(fd_), out, static_cast<size_t>(n), offset);
    if (got <= 0) {
      if (got < 0 && errno == EINTR) continue;
      TB_THROW(ErrorCode::Data, path_ + ": short read at byte " + std::to_string(offset));
    }
    offset += got;
    out += got;
    n -= got;
  }
}

#endif

}  // namespace tb
