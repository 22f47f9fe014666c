// Host memory for batches: page-locked (pinned) when asked and a CUDA device
// is present, so copies to the GPU run at full PCIe speed and asynchronously;
// ordinary memory otherwise (and in builds without CUDA).
#pragma once
#include <cstddef>
#include <cstdint>

namespace tb {

class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(std::size_t bytes, bool want_pinned);
  ~HostBuffer();
  HostBuffer(HostBuffer&& other) noexcept;
  HostBuffer& operator=(HostBuffer&& other) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  std::uint8_t* data() { return data_; }
  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool pinned() const { return pinned_; }
  std::uint8_t& operator[](std::size_t i) { return data_[i]; }
  const std::uint8_t& operator[](std::size_t i) const { return data_[i]; }

 private:
  void release();
  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  bool pinned_ = false;
};

// Implemented by the CUDA backend (cudaHostAlloc); nullptr when unavailable.
void* pinned_alloc(std::size_t bytes);
void pinned_free(void* ptr);

}  // namespace tb
