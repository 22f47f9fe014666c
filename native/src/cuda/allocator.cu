#include "cuda/allocator.h"

#include <cuda_runtime.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.h"
#include "cuda/cuda_check.h"

namespace tb {

CudaAllocator& CudaAllocator::for_device(int device) {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<CudaAllocator>> allocators;
  std::lock_guard<std::mutex> lock(mutex);
  if (device < 0) TB_THROW(ErrorCode::BadInput, "device index must be >= 0, got " + std::to_string(device));
  if (allocators.size() <= static_cast<size_t>(device)) allocators.resize(static_cast<size_t>(device) + 1);
  if (!allocators[static_cast<size_t>(device)]) allocators[static_cast<size_t>(device)].reset(new CudaAllocator(device));
  return *allocators[static_cast<size_t>(device)];
}

std::size_t CudaAllocator::round_size(std::size_t bytes) {
  if (bytes == 0) bytes = 1;
  const std::size_t unit = bytes < (1u << 20) ? 512 : (2u << 20);
  return (bytes + unit - 1) / unit * unit;
}

void* CudaAllocator::allocate(std::size_t bytes, cudaStream_t stream) {
  const std::size_t size = round_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  const auto done = [](void* event) {
    const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (e == cudaErrorNotReady) cudaGetLastError();  // an answer, not an error for the next launch check to find
    return e == cudaSuccess;
  };
  if (const std::optional<BlockCache::Block> b = free_.take(size, stream, done)) {
    if (b->freed) cudaEventDestroy(static_cast<cudaEvent_t>(b->freed));
    in_use_[b->ptr] = {b->size, stream};
    stats_.allocated += b->size;
    if (stats_.allocated > stats_.peak_allocated) stats_.peak_allocated = stats_.allocated;
    ++stats_.allocations;
    TB_DEVICE_MEMORY_LENT(b->ptr, bytes, b->size, stream, false);
    return b->ptr;
  }
  TB_CUDA_CHECK(cudaSetDevice(device_));
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, size);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    // Give the cache back and try once more before calling it an OOM.
    free_cached();
    err = cudaMalloc(&p, size);
  }
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // OOM is not sticky: the context stays usable
    std::size_t free_bytes = 0, total = 0;
    cudaMemGetInfo(&free_bytes, &total);
    ++stats_.ooms;
    TB_THROW(ErrorCode::OOM, "out of GPU memory on cuda:" + std::to_string(device_) + ": requested " + std::to_string(size) +
                                 " bytes, " + std::to_string(free_bytes) + " free of " + std::to_string(total) + " (" +
                                 std::to_string(stats_.allocated) + " allocated by Trainbench)");
  }
  TB_CUDA_CHECK(err);
  in_use_[p] = {size, stream};
  stats_.reserved += size;
  stats_.allocated += size;
  if (stats_.allocated > stats_.peak_allocated) stats_.peak_allocated = stats_.allocated;
  ++stats_.allocations;
  TB_DEVICE_MEMORY_LENT(p, bytes, size, stream, true);
  return p;
}

void CudaAllocator::release(void* ptr) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = in_use_.find(ptr);
  if (it == in_use_.end()) return;  // not ours: nothing sensible to do, and never crash
  stats_.allocated -= it->second.size;
  BlockCache::Block b{it->second.size, ptr, it->second.stream, nullptr};
  // The event marks the end of the work queued on the block's stream; inside a graph capture no event can
  // mark that, so the block then stays with its stream until the cache is emptied.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaEvent_t event = nullptr;
  if (cudaStreamIsCapturing(b.stream ? static_cast<cudaStream_t>(b.stream) : nullptr, &capture) == cudaSuccess &&
      capture == cudaStreamCaptureStatusNone && cudaEventCreateWithFlags(&event, cudaEventDisableTiming) == cudaSuccess) {
    if (cudaEventRecord(event, it->second.stream) == cudaSuccess) b.freed = event;
    else cudaEventDestroy(event);
  }
  cudaGetLastError();  // a release never throws (it runs in destructors)
  TB_DEVICE_MEMORY_RETURNED(ptr, it->second.size, it->second.stream);
  free_.put(b);
  in_use_.erase(it);
}

// Every pending free has completed after the device sync, so every cached block can go back to the driver.
void CudaAllocator::free_cached() {
  cudaSetDevice(device_);
  cudaDeviceSynchronize();
  free_.drain([&](const BlockCache::Block& b) {
    if (b.freed) cudaEventDestroy(static_cast<cudaEvent_t>(b.freed));
    cudaFree(b.ptr);
    stats_.reserved -= b.size;
  });
  cudaGetLastError();
}

void CudaAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  free_cached();
}

AllocatorStats CudaAllocator::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

DeviceBuffer::DeviceBuffer(int device, std::size_t bytes, cudaStream_t stream)
    : device_(device), ptr_(CudaAllocator::for_device(device).allocate(bytes, stream)), bytes_(bytes) {}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) CudaAllocator::for_device(device_).release(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : device_(o.device_), ptr_(o.ptr_), bytes_(o.bytes_) {
  o.ptr_ = nullptr;
  o.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) CudaAllocator::for_device(device_).release(ptr_);
    device_ = o.device_;
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

}  // namespace tb
