// Typed engine errors. Native code never exits or aborts on bad input: it throws
// tb::Error, and the N-API layer turns it into a JS Error with a stable `code`.
#pragma once
#include <stdexcept>
#include <string>

namespace tb {

enum class ErrorCode { OOM, BadInput, Data, Cuda, Cancelled, Internal };

// The stable string form used by JS callers ("E_OOM", "E_BAD_INPUT", ...).
const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message, const char* file, int line);
  ErrorCode code() const { return code_; }
  // "file.cpp:123", for bug reports; the message stays readable without it.
  const std::string& where() const { return where_; }

 private:
  ErrorCode code_;
  std::string where_;
};

}  // namespace tb

#define TB_THROW(code, message) throw ::tb::Error((code), (message), __FILE__, __LINE__)
#define TB_CHECK(cond, code, message) \
  do {                                \
    if (!(cond)) TB_THROW(code, message); \
  } while (0)
