// The engine's file access on Windows, run under Wine by engine-files.test.ts:
// what Linux cannot show (share modes, UTF-8 paths against the ANSI code page,
// replacing a file, MAX_PATH). Each case prints "ok <name>" or "FAIL <name>: why".
// argv[1] is a scratch folder (a Windows path).
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX  // windows.h's min/max macros would break std::min/std::max
#include <windows.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>

#include "core/errors.h"
#include "core/file_path.h"
#include "data/files.h"

namespace {

std::string scratch;
int failures = 0;

void check(const char* name, const std::function<std::string()>& body) {
  std::string why;
  try {
    why = body();
  } catch (const tb::Error& e) {
    why = std::string(tb::error_code_name(e.code())) + " " + e.what();
  } catch (const std::exception& e) {
    why = std::string("exception: ") + e.what();
  }
  if (why.empty()) std::printf("ok %s\n", name);
  else {
    ++failures;
    std::printf("FAIL %s: %s\n", name, why.c_str());
  }
  std::fflush(stdout);
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(tb::fs_path(path), std::ios::binary | std::ios::trunc);
  out << text;
}

std::string read_file(const std::string& path) {
  std::ifstream in(tb::fs_path(path), std::ios::binary);
  if (!in) return "<cannot open>";
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: engine_files_win.exe <scratch folder>\n");
    return 2;
  }
  scratch = argv[1];

  // A writer like Python's open(): write access, sharing read and write. Reading
  // a source file that is still being written must work, as it does on Linux.
  check("maps and reads a file another handle has open for writing", [] {
    const std::string path = scratch + "\\being-written.bin";
    write_file(path, "0123456789");
    HANDLE writer = CreateFileW(tb::to_wide_path(path).c_str(), GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE, nullptr,
                                OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
    if (writer == INVALID_HANDLE_VALUE) return std::string("test setup: cannot open the writer");
    std::string why;
    try {
      tb::MappedFile mapped(path);
      tb::FileReader reader(path);
      std::uint8_t buf[4];
      reader.read_at(3, 4, buf);
      if (mapped.size() != 10 || std::memcmp(mapped.data(), "0123456789", 10) != 0) why = "the mapping does not hold the file";
      else if (std::memcmp(buf, "3456", 4) != 0) why = "read_at(3, 4) did not read 3456";
    } catch (...) {
      CloseHandle(writer);
      throw;
    }
    CloseHandle(writer);
    return why;
  });

  // Node hands the engine UTF-8; the ANSI code page cannot spell these names.
  check("opens UTF-8 paths with non-ASCII folder names", [] {
    const std::string dir = scratch + "\\J\xC3\xBCrgen \xE3\x83\x87\xE3\x83\xBC\xE3\x82\xBF";  // "Jürgen データ"
    if (!CreateDirectoryW(tb::to_wide_path(dir).c_str(), nullptr) && GetLastError() != ERROR_ALREADY_EXISTS)
      return "cannot make " + dir + ": " + tb::win32_error_text(GetLastError());
    const std::string path = dir + "/manifest.json";  // the engine joins with '/'
    write_file(path, "{\"records\": 3}");
    if (read_file(path) != "{\"records\": 3}") return "std::ifstream(fs_path) did not read back what was written: " + read_file(path);
    tb::MappedFile mapped(path);
    if (mapped.size() != 14) return "MappedFile size " + std::to_string(mapped.size());
    return std::string();
  });

  check("replace_file replaces an existing file in one step", [] {
    const std::string to = scratch + "\\checkpoint.safetensors", from = to + ".tmp";
    write_file(to, "old");
    write_file(from, "new");
    tb::replace_file(from, to);
    if (read_file(to) != "new") return "the target holds " + read_file(to);
    if (GetFileAttributesW(tb::to_wide_path(from).c_str()) != INVALID_FILE_ATTRIBUTES) return std::string("the temporary file is still there");
    return std::string();
  });

  check("opens a path longer than MAX_PATH, with / and .. in it", [] {
    std::string dir = scratch;
    for (int i = 0; dir.size() < 300; ++i) {
      dir += "\\folder-with-a-long-name-" + std::to_string(i);
      if (!CreateDirectoryW(tb::to_wide_path(dir).c_str(), nullptr) && GetLastError() != ERROR_ALREADY_EXISTS)
        return "cannot make " + dir + ": " + tb::win32_error_text(GetLastError());
    }
    write_file(dir + "\\shard-00000.bin", "shard");
    const std::string path = dir + "/sub/../shard-00000.bin";
    tb::MappedFile mapped(path);
    if (mapped.size() != 5) return "MappedFile size " + std::to_string(mapped.size());
    if (read_file(path) != "shard") return "std::ifstream(fs_path) read " + read_file(path);
    return std::string();
  });

  check("says why a file does not open, in the system's words", [] {
    const std::string path = scratch + "\\no-such-shard.bin";
    try {
      tb::MappedFile mapped(path);
    } catch (const tb::Error& e) {
      const std::string m = e.what();
      if (e.code() != tb::ErrorCode::Data) return "code " + std::string(tb::error_code_name(e.code()));
      if (m.find(path) == std::string::npos || m.find("(Windows error 2)") == std::string::npos) return "message: " + m;
      return std::string();
    }
    return std::string("opened a file that does not exist");
  });

  check("rejects a path that is not UTF-8 with E_BAD_INPUT", [] {
    try {
      tb::FileReader reader(scratch + "\\bad-\xFF-name.bin");
    } catch (const tb::Error& e) {
      const std::string m = e.what();
      if (e.code() != tb::ErrorCode::BadInput || m.find("is not valid UTF-8") == std::string::npos) return "got: " + m;
      return std::string();
    }
    return std::string("opened a path that is not UTF-8");
  });

  return failures == 0 ? 0 : 1;
}
