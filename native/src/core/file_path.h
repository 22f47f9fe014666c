// UTF-8 paths, as Node hands them to the engine, for the C++ and OS file APIs.
// On Windows a narrow path means the ANSI code page, so a non-ASCII folder
// (a workspace under C:\Users\Jürgen) would not open: every file the engine
// opens goes through here.
#pragma once
#include <filesystem>
#include <string>

namespace tb {

// The path for std::ifstream / std::ofstream / std::filesystem. On Windows it is
// the wide path of to_wide_path below.
std::filesystem::path fs_path(const std::string& utf8);

// Replaces `to` with `from` in one step (a reader sees the old file or the new
// one, never none); throws E_BAD_INPUT naming both paths and the OS's reason.
void replace_file(const std::string& from, const std::string& to);

// A file created new at `path` (refused when anything, a link included, is there) and written through its own
// handle, never by name again: a link planted in a workspace folder cannot send the bytes outside (issue 41 F3).
// Every failure throws E_BAD_INPUT naming the path and the OS's reason.
class NewFile {
 public:
  explicit NewFile(const std::string& path);
  ~NewFile();
  NewFile(const NewFile&) = delete;
  NewFile& operator=(const NewFile&) = delete;
  void write(const void* data, size_t bytes);
  // Closes it, reporting what a close can (a full disk on some file systems); the destructor closes quietly.
  void close();

 private:
  std::string path_;
#ifdef _WIN32
  void* handle_;
#else
  int fd_;
#endif
};

#ifdef _WIN32
// UTF-8 to UTF-16; throws E_BAD_INPUT on invalid UTF-8. Absolute paths of
// MAX_PATH or more get the \\?\ prefix (with '/' turned into '\' and . / ..
// resolved, which that prefix no longer does), so deep workspaces open too.
std::wstring to_wide_path(const std::string& utf8);

// The system's message for a GetLastError() code, in UTF-8.
std::string win32_error_text(unsigned long code);
#endif

}  // namespace tb
