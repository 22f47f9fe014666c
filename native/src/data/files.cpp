#include "data/files.h"

#include <cerrno>
#include <cstring>

#include "core/errors.h"
#include "core/file_path.h"

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX  // windows.h's min/max macros would break std::min/std::max
#include <windows.h>
#else
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace tb {

#ifdef _WIN32

// Shared like Node's own fs.open: a file another program still has open for
// writing (or renames or deletes) can be read, as it can on Linux; with
// FILE_SHARE_READ alone that is a sharing violation.
static HANDLE open_for_reading(const std::string& path, ErrorCode code) {
  HANDLE h = CreateFileW(to_wide_path(path).c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                         OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (h == INVALID_HANDLE_VALUE) TB_THROW(code, "cannot open " + path + ": " + win32_error_text(GetLastError()));
  return h;
}

static std::int64_t file_size(HANDLE h, const std::string& path, ErrorCode code) {
  LARGE_INTEGER size;
  if (!GetFileSizeEx(h, &size)) {
    const DWORD err = GetLastError();
    CloseHandle(h);
    TB_THROW(code, "cannot read the size of " + path + ": " + win32_error_text(err));
  }
  return size.QuadPart;
}

MappedFile::MappedFile(const std::string& path) {
  HANDLE file = open_for_reading(path, ErrorCode::Data);
  size_ = file_size(file, path, ErrorCode::Data);
  DWORD err = 0;
  if (size_ > 0) {  // an empty file cannot be mapped, and needs no mapping
    handle_ = CreateFileMappingW(file, nullptr, PAGE_READONLY, 0, 0, nullptr);
    if (handle_) data_ = static_cast<const std::uint8_t*>(MapViewOfFile(handle_, FILE_MAP_READ, 0, 0, 0));
    if (!data_) err = GetLastError();
  }
  CloseHandle(file);  // the mapping keeps the file open
  if (size_ > 0 && !data_) {
    if (handle_) CloseHandle(handle_);
    handle_ = nullptr;
    TB_THROW(ErrorCode::Data, "cannot memory-map " + path + ": " + win32_error_text(err));
  }
}

MappedFile::~MappedFile() {
  if (data_) UnmapViewOfFile(data_);
  if (handle_) CloseHandle(handle_);
}

FileReader::FileReader(const std::string& path) : path_(path) {
  HANDLE h = open_for_reading(path, ErrorCode::BadInput);
  size_ = file_size(h, path, ErrorCode::BadInput);
  fd_ = reinterpret_cast<std::intptr_t>(h);
}

FileReader::~FileReader() {
  if (fd_ != -1) CloseHandle(reinterpret_cast<HANDLE>(fd_));
}

void FileReader::read_at(std::int64_t offset, std::int64_t n, std::uint8_t* out) const {
  while (n > 0) {
    // The offset rides in OVERLAPPED (64-bit), so threads share one handle
    // without a file pointer, like pread.
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
    const int err = errno;
    ::close(fd);
    TB_THROW(ErrorCode::Data, "cannot stat " + path + ": " + std::strerror(err));
  }
  size_ = st.st_size;
  if (size_ > 0) {
    void* p = mmap(nullptr, static_cast<size_t>(size_), PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      TB_THROW(ErrorCode::Data, "cannot memory-map " + path + ": " + std::strerror(err));
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
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    TB_THROW(ErrorCode::BadInput, "cannot stat " + path + ": " + std::strerror(err));
  }
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
