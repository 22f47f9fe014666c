#include "core/file_path.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/errors.h"

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX  // windows.h's min/max macros would break std::min/std::max
#include <windows.h>
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

void replace_file(const std::string& from, const std::string& to) {
  // MoveFileEx replaces in one step; remove-then-rename would leave a moment with no file.
  if (!MoveFileExW(to_wide_path(from).c_str(), to_wide_path(to).c_str(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
    TB_THROW(ErrorCode::BadInput, "cannot move " + from + " to " + to + ": " + win32_error_text(GetLastError()));
}

#else

std::filesystem::path fs_path(const std::string& utf8) { return std::filesystem::path(utf8); }

void replace_file(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0)
    TB_THROW(ErrorCode::BadInput, "cannot move " + from + " to " + to + ": " + std::strerror(errno));
}

#endif

}  // namespace tb
