// Every CUDA call goes through TB_CUDA_CHECK: a failure becomes E_CUDA naming
// the call, the error and the source line (never an abort).
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "core/errors.h"

namespace tb {

inline void cuda_check(cudaError_t err, const char* call, const char* file, int line) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // clear non-sticky errors so the engine stays usable
  throw Error(ErrorCode::Cuda, std::string(call) + " failed: " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err), file, line);
}

}  // namespace tb

// A kernel launch, TB_LAUNCH(kernel, grid, block, shared bytes, stream)(args...): <<<...>>> under nvcc,
// the emulated device's launcher in the emulated build (native/emu/cuda_emu.h, docs/adr/0023-emulated-cuda.md).
#ifndef TB_CUDA_EMULATED
#define TB_LAUNCH(kernel, grid, block, smem, stream) kernel<<<grid, block, smem, stream>>>
#endif
// A caching allocator lending device memory (`bytes` of a `block`-byte block, for work on `stream`;
// `fresh` when it comes straight from cudaMalloc) and taking it back (on the stream it was lent for):
// the emulated device's AddressSanitizer build poisons what lies past the request and what sits in
// the cache, in stream order; nothing anywhere else.
#ifndef TB_CUDA_EMULATED
#define TB_DEVICE_MEMORY_LENT(ptr, bytes, block, stream, fresh) ((void)0)
#define TB_DEVICE_MEMORY_RETURNED(ptr, block, stream) ((void)0)
#endif
// Tensor-core (WMMA) kernel bodies: compiled for sm_80 and newer, and in the emulated build.
#if defined(TB_CUDA_EMULATED) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800)
#define TB_HAS_WMMA 1
#else
#define TB_HAS_WMMA 0
#endif

#define TB_CUDA_CHECK(call) ::tb::cuda_check((call), #call, __FILE__, __LINE__)
// After a kernel launch: launch configuration errors surface here.
#define TB_CUDA_LAUNCH_CHECK() ::tb::cuda_check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
