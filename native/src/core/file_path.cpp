#include "core/file_path.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/errors.h"

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX  // windows.h's min/max macros would break std::min/std::max
#include <windows.h>
#else
#include <fcntl.h>
#include <unistd.h>
#endif

namespace tb {

#ifdef _WIN32

static std::string narrow(const std::wstring& w) {
  const int n = WideCharToMultiByte(CP_UTF8, 0, w.data(), static_cast<int>(w.size()), nullptr, 0, nullptr, nullptr);
  std::string s(static_cast<size_t>(n), '\0');
  if (n > 0) WideCharToMultiByte(CP_UTF8, 0, w.data(), static_cast<int>(w.size()), &s[0], n, nullptr, nullptr);
  return s;
}

std::string win32_error_text(unsigned long code) {
  wchar_t* text = nullptr;
  const DWORD n = FormatMessageW(FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
                                 nullptr, code, 0, reinterpret_cast<wchar_t*>(&text), 0, nullptr);
  std::wstring w = n ? std::wstring(text, n) : L"";
  if (text) LocalFree(text);
  while (!w.empty() && (w.back() == L'\n' || w.back() == L'\r' || w.back() == L' ' || w.back() == L'.')) w.pop_back();
  return (w.empty() ? std::string("system error") : narrow(w)) + " (Windows error " + std::to_string(code) + ")";
}

std::wstring to_wide_path(const std::string& utf8) {
  if (utf8.empty()) return L"";
  const int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8.data(), static_cast<int>(utf8.size()), nullptr, 0);
  if (n <= 0) TB_THROW(ErrorCode::BadInput, "the path " + utf8 + " is not valid UTF-8");
  std::wstring w(static_cast<size_t>(n), L'\0');
  MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8.data(), static_cast<int>(utf8.size()), &w[0], n);
  if (w.size() < MAX_PATH || w.rfind(L"\\\\?\\", 0) == 0) return w;
  const bool drive = w.size() > 2 && w[1] == L':' && (w[2] == L'\\' || w[2] == L'/');
  const bool unc = (w[0] == L'\\' || w[0] == L'/') && (w[1] == L'\\' || w[1] == L'/');
  if (!drive && !unc) return w;  // relative: the prefix needs an absolute path
  std::wstring full = std::filesystem::path(w).lexically_normal().make_preferred().wstring();
  return drive ? L"\\\\?\\" + full : L"\\\\?\\UNC\\" + full.substr(2);
}

std::filesystem::path fs_path(const std::string& utf8) { return std::filesystem::path(to_wide_path(utf8)); }

NewFile::NewFile(const std::string& path) : path_(path) {
  // CREATE_NEW fails on any existing name, a link included.
  handle_ = CreateFileW(to_wide_path(path).c_str(), GENERIC_WRITE, 0, nullptr, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (handle_ == INVALID_HANDLE_VALUE) TB_THROW(ErrorCode::BadInput, "cannot create " + path + ": " + win32_error_text(GetLastError()));
}

NewFile::~NewFile() {
  if (handle_ != INVALID_HANDLE_VALUE) CloseHandle(handle_);
}

void NewFile::write(const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const DWORD chunk = static_cast<DWORD>(std::min<size_t>(bytes, 1u << 30));
    DWORD done = 0;
    if (!WriteFile(handle_, p, chunk, &done, nullptr) || done == 0)
      TB_THROW(ErrorCode::BadInput, "cannot write " + path_ + ": " + win32_error_text(GetLastError()));
    p += done;
    bytes -= done;
  }
}

void NewFile::close() {
  void* h = handle_;
  handle_ = INVALID_HANDLE_VALUE;
  if (!CloseHandle(h)) TB_THROW(ErrorCode::BadInput, "cannot close " + path_ + ": " + win32_error_text(GetLastError()));
}

void replace_file(const std::string& from, const std::string& to) {
  // MoveFileEx replaces in one step; remove-then-rename would leave a moment with no file.
  if (!MoveFileExW(to_wide_path(from).c_str(), to_wide_path(to).c_str(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
    TB_THROW(ErrorCode::BadInput, "cannot move " + from + " to " + to + ": " + win32_error_text(GetLastError()));
}

#else

std::filesystem::path fs_path(const std::string& utf8) { return std::filesystem::path(utf8); }

NewFile::NewFile(const std::string& path) : path_(path) {
  // O_EXCL with O_CREAT never follows a link at the name; O_NOFOLLOW says so where O_EXCL alone might not.
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) TB_THROW(ErrorCode::BadInput, "cannot create " + path + ": " + std::strerror(errno));
}

NewFile::~NewFile() {
  if (fd_ >= 0) ::close(fd_);
}

void NewFile::write(const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t done = ::write(fd_, p, bytes);
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) TB_THROW(ErrorCode::BadInput, "cannot write " + path_ + ": " + (done < 0 ? std::strerror(errno) : "no space written (disk full?)"));
    p += done;
    bytes -= static_cast<size_t>(done);
  }
}

void NewFile::close() {
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) TB_THROW(ErrorCode::BadInput, "cannot close " + path_ + ": " + std::strerror(errno));
}

void replace_file(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0)
    TB_THROW(ErrorCode::BadInput, "cannot move " + from + " to " + to + ": " + std::strerror(errno));
}

#endif

}  // namespace tb
