#include "core/device_spec.h"

#include <cctype>

#include "core/device_info.h"
#include "core/errors.h"

namespace tb {

static bool parse_index(const std::string& digits, int* out) {
  if (digits.empty() || digits.size() > 4) return false;
  int value = 0;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    value = value * 10 + (c - '0');
  }
  *out = value;
  return true;
}

DeviceSpec resolve_device(const std::string& text) {
  if (text == "cpu") return DeviceSpec{DeviceKind::Cpu, 0};
  int index = 0;
  const bool is_cuda = text == "cuda" || (text.rfind("cuda:", 0) == 0 && parse_index(text.substr(5), &index));
  if (!is_cuda) {
    TB_THROW(ErrorCode::BadInput, "device '" + text + "' is not valid: expected 'cpu', 'cuda' or 'cuda:N'");
  }
  const CudaStatus status = cuda_status();
  if (!status.available) {
    TB_THROW(ErrorCode::BadInput, "device '" + text + "' is not available: " + status.reason);
  }
  if (index >= static_cast<int>(status.devices.size())) {
    TB_THROW(ErrorCode::BadInput, "device '" + text + "' does not exist: this machine has " +
                                      std::to_string(status.devices.size()) + " CUDA device(s)");
  }
  return DeviceSpec{DeviceKind::Cuda, index};
}

}  // namespace tb
