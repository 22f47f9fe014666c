// Links the engine without Node: proves N-API stays in addon/ and gives a quick
// check of device discovery from a shell (`build/Release/tb_native_smoke`).
#include <cstdio>

#include "core/device_info.h"
#include "core/device_spec.h"
#include "core/errors.h"

int main() {
  const tb::CpuInfo cpu = tb::cpu_info();
  std::printf("cpu: %s (%s, %d logical cores)\n", cpu.name.c_str(), cpu.arch.c_str(), cpu.logical_cores);
  const tb::CudaStatus cuda = tb::cuda_status();
  std::printf("cuda: compiled=%d available=%d devices=%zu reason=%s\n", cuda.compiled, cuda.available,
              cuda.devices.size(), cuda.reason.c_str());
  try {
    tb::resolve_device("gpu0");
    std::printf("FAIL: 'gpu0' was accepted\n");
    return 1;
  } catch (const tb::Error& e) {
    std::printf("bad device rejected: %s %s\n", tb::error_code_name(e.code()), e.what());
  }
  return 0;
}
