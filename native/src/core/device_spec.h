// Parsing of device names ("cpu", "cuda", "cuda:N") shared by every entry point.
#pragma once
#include <string>

namespace tb {

enum class DeviceKind { Cpu, Cuda };

struct DeviceSpec {
  DeviceKind kind = DeviceKind::Cpu;
  int index = 0;
};

// Throws E_BAD_INPUT naming the text when it is not a device name, or when it
// names a CUDA device this machine does not have (with the reason).
DeviceSpec resolve_device(const std::string& text);

}  // namespace tb
