// Page-locked host memory for the loader, only when a CUDA device exists.
#include <cuda_runtime.h>

#include "core/device_info.h"
#include "data/host_buffer.h"

namespace tb {

void* pinned_alloc(std::size_t bytes) {
  static const bool available = cuda_status().available;
  if (!available) return nullptr;
  void* p = nullptr;
  if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();  // fall back to pageable memory, never fail the loader
    return nullptr;
  }
  return p;
}

void pinned_free(void* ptr) { cudaFreeHost(ptr); }

}  // namespace tb
