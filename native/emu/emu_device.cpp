// The emulated device's runtime, part 1: errors and what the device says it is
// (emu_internal.h has what the parts share).
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "emu_internal.h"

namespace tb::emu {

// ---------------------------------------------------------------- errors
// Runtime API, "Error Handling": cudaGetLastError returns the last error of a runtime call
// on this host thread and resets it. Errors of work already queued (a kernel that fails)
// surface at the next call that waits for it; the emulator keeps them non-sticky, so one
// failing test does not poison the process as a real fault would.
namespace {
thread_local cudaError_t t_last = cudaSuccess;
thread_local std::string t_detail;
std::mutex g_async_mu;
cudaError_t g_async = cudaSuccess;
std::string g_async_detail;
}  // namespace

cudaError_t fail(cudaError_t e, std::string detail) {
  t_last = e;
  if (!detail.empty()) t_detail = std::move(detail);
  return e;
}

void async_fail(cudaError_t e, const std::string& detail) {
  std::fprintf(stderr, "emulated CUDA: %s\n", detail.c_str());
  std::lock_guard<std::mutex> lock(g_async_mu);
  if (g_async == cudaSuccess) {
    g_async = e;
    g_async_detail = detail;
  }
}

/** After a wait: the error of work that ran meanwhile, once. */
cudaError_t take_async() {
  std::lock_guard<std::mutex> lock(g_async_mu);
  const cudaError_t e = g_async;
  if (e != cudaSuccess) {
    t_last = e;
    t_detail = g_async_detail;
  }
  g_async = cudaSuccess;
  return e;
}

}  // namespace tb::emu

using namespace tb::emu;

extern "C" {

// ---------------------------------------------------------------- errors
cudaError_t cudaGetLastError(void) {
  const cudaError_t e = t_last;
  t_last = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError(void) { return t_last; }

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureImplicit: return "cudaErrorStreamCaptureImplicit";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    default: return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t e) {
  // The emulator's own words for this thread's last error (which kernel, which threads, which site).
  if (e == t_last || (!t_detail.empty() && e != cudaSuccess)) {
    if (!t_detail.empty()) return t_detail.c_str();
  }
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorMemoryAllocation: return "out of memory (emulated device)";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    default: return cudaGetErrorName(e);
  }
}

// ---------------------------------------------------------------- device
cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice); }
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}

/** What the emulated device says it is: its name says "emulated (CPU)" wherever a device name is shown. */
constexpr int kEmuSms = 4;
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  if (device != 0) return fail(cudaErrorInvalidDevice);
  std::memset(prop, 0, sizeof *prop);
  std::snprintf(prop->name, sizeof prop->name, "Trainbench emulated CUDA device, emulated (CPU)");
  prop->totalGlobalMem = device_capacity();
  prop->sharedMemPerBlock = 48 * 1024;
  prop->regsPerBlock = 65536;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = 1024;
  prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 0x7fffffff;
  prop->maxGridSize[1] = 65535;
  prop->maxGridSize[2] = 65535;
  prop->major = 9;  // the kernels' sm_80+ paths (WMMA) run: the build under test is sm_90
  prop->minor = 0;
  prop->multiProcessorCount = kEmuSms;
  prop->l2CacheSize = 4 << 20;
  prop->maxThreadsPerMultiProcessor = 2048;
  prop->unifiedAddressing = 1;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  if (device != 0) return fail(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMultiProcessorCount: *value = kEmuSms; break;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrClockRate: *value = 1000000; break;  // kHz; timings from here are never GPU figures
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    default: *value = 0; return fail(cudaErrorInvalidValue, "emulated CUDA: device attribute " + std::to_string(static_cast<int>(attr)) + " is not modelled");
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* bus, int len, int device) {
  if (device != 0) return fail(cudaErrorInvalidDevice);
  std::snprintf(bus, static_cast<std::size_t>(len), "emulated");
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  if (unsafe_under_capture()) return fail(cudaErrorStreamCaptureUnsupported);
  flush_blocking_streams();
  std::vector<CUstream_st*> all;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    all.assign(g_streams.begin(), g_streams.end());
  }
  for (CUstream_st* s : all) flush_all(s);
  return take_async();
}

}  // extern "C"
