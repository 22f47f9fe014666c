// What the engine can run on: the host CPU and, when compiled in, CUDA devices.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tb {

struct CpuInfo {
  std::string name;
  std::string arch;  // "x86_64", "arm64", ...
  int logical_cores = 0;
  std::vector<std::string> simd;  // e.g. {"sse4.2", "avx2", "fma"}
};

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  std::uint64_t total_memory_bytes = 0;
  int compute_major = 0;
  int compute_minor = 0;
  int multiprocessors = 0;
  std::string pci_bus_id;
};

struct CudaStatus {
  bool compiled = false;     // the CUDA backend is in this binary
  bool emulated = false;     // ...built for the emulated device (CPU), not a GPU: its timings are never GPU figures
  bool available = false;    // a driver answered and at least one device exists
  std::string reason;        // why not available, in words a person can act on
  int driver_version = 0;    // e.g. 13000 for 13.0; 0 when no driver
  int runtime_version = 0;   // the statically linked runtime
  std::vector<CudaDeviceInfo> devices;
};

CpuInfo cpu_info();
CudaStatus cuda_status();

}  // namespace tb
