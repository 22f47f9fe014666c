// One caching allocator per device. Freed blocks are kept for reuse (cudaMalloc
// and cudaFree synchronise the device), in stream order: a block goes back at
// once to the stream that used it, and to another stream only after the work
// queued before its free has finished (block_cache.h). Running out of memory is
// a typed, recoverable E_OOM with the bytes requested and free: the batch-size
// search depends on trying a size, failing cleanly, and going on.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "cuda/block_cache.h"

namespace tb {

struct AllocatorStats {
  std::uint64_t allocated = 0;  // bytes handed out now
  std::uint64_t reserved = 0;   // bytes held from cudaMalloc (allocated + cached)
  std::uint64_t peak_allocated = 0;
  std::uint64_t allocations = 0;
  std::uint64_t ooms = 0;
};

class CudaAllocator {
 public:
  static CudaAllocator& for_device(int device);

  // A block for work queued on `stream` (null: the legacy default stream).
  void* allocate(std::size_t bytes, cudaStream_t stream);
  // Returns the block to the cache, ordered after the work queued so far on its stream.
  void release(void* ptr);
  // Returns cached blocks to the driver (called once before giving up on an allocation).
  void empty_cache();
  AllocatorStats stats();

  // Sizes are rounded so blocks are reusable: 512 B granularity below 1 MiB, 2 MiB above.
  static std::size_t round_size(std::size_t bytes);

 private:
  struct InUse {
    std::size_t size;
    cudaStream_t stream;
  };
  explicit CudaAllocator(int device) : device_(device) {}
  void free_cached();  // with mutex_ held
  int device_;
  std::mutex mutex_;
  BlockCache free_;
  std::unordered_map<void*, InUse> in_use_;
  AllocatorStats stats_;
};

// RAII device memory from the caching allocator, for work on `stream` (the stream whose order protects
// its reuse: pass the stream that reads and writes it last).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int device, std::size_t bytes, cudaStream_t stream = nullptr);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  int device_ = 0;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace tb
