// CUDA device discovery. The runtime is linked statically and loads the driver
// at run time, so on a machine without a driver every call here returns an
// error code that we turn into a reason string, never a crash.
#include <cuda_runtime.h>

#include <string>

#include "core/device_info.h"

namespace tb {

static std::string describe(cudaError_t err) {
  return std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
}

static std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

static std::string unavailable_reason(cudaError_t err, int driver_version) {
  if (err == cudaErrorNoDevice) return "no CUDA device found (the NVIDIA driver is loaded but reports no GPU)";
  if (err == cudaErrorInsufficientDriver && driver_version == 0) {
    return "no NVIDIA driver found (libcuda could not be loaded)";
  }
  if (err == cudaErrorInsufficientDriver) {
    return "the NVIDIA driver supports CUDA " + version_text(driver_version) + " but this build needs " +
           version_text(CUDART_VERSION) + ": update the driver";
  }
  return "CUDA is not usable: " + describe(err);
}

CudaStatus cuda_status() {
  CudaStatus status;
  status.compiled = true;
#if defined(TB_CUDA_EMULATED)
  status.emulated = true;
#endif
  cudaRuntimeGetVersion(&status.runtime_version);
  if (cudaDriverGetVersion(&status.driver_version) != cudaSuccess) status.driver_version = 0;

  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    cudaGetLastError();  // clear the non-sticky error so later calls start clean
    status.reason = unavailable_reason(err == cudaSuccess ? cudaErrorNoDevice : err, status.driver_version);
    return status;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    const cudaError_t perr = cudaGetDeviceProperties(&prop, i);
    if (perr != cudaSuccess) {
      status.reason = "device " + std::to_string(i) + " could not be queried: " + describe(perr);
      continue;
    }
    CudaDeviceInfo d;
    d.index = i;
    d.name = prop.name;
    d.total_memory_bytes = prop.totalGlobalMem;
    d.compute_major = prop.major;
    d.compute_minor = prop.minor;
    d.multiprocessors = prop.multiProcessorCount;
    char bus[32] = {0};
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), i) == cudaSuccess) d.pci_bus_id = bus;
    status.devices.push_back(d);
  }
  status.available = !status.devices.empty();
  return status;
}

}  // namespace tb
