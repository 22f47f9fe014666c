#include "core/errors.h"

namespace tb {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::OOM: return "E_OOM";
    case ErrorCode::BadInput: return "E_BAD_INPUT";
    case ErrorCode::Data: return "E_DATA";
    case ErrorCode::Cuda: return "E_CUDA";
    case ErrorCode::Cancelled: return "E_CANCELLED";
    case ErrorCode::Internal: return "E_INTERNAL";
  }
  return "E_INTERNAL";
}

static std::string basename_of(const char* path) {
  std::string p(path);
  const auto slash = p.find_last_of("/\\");
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

Error::Error(ErrorCode code, const std::string& message, const char* file, int line)
    : std::runtime_error(message), code_(code), where_(basename_of(file) + ":" + std::to_string(line)) {}

}  // namespace tb
