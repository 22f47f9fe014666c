#include "cuda/device_prefetcher.h"

#include <cstring>

#include "core/errors.h"
#include "cuda/cuda_check.h"

namespace tb {

DevicePrefetcher::DevicePrefetcher(Loader& loader, int device, int depth, cudaStream_t compute)
    : loader_(loader), loader_serial_(loader.serial()), device_(device), compute_(compute) {
  if (depth < 1 || depth > 16) TB_THROW(ErrorCode::BadInput, "GPU prefetch depth must be 1 to 16, got " + std::to_string(depth));
  TB_CUDA_CHECK(cudaSetDevice(device));
  TB_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
  const int batch = loader.options().batch_size;
  const size_t fields = loader.options().fields.size();
  slots_.resize(static_cast<size_t>(depth));
  for (auto& s : slots_) {
    for (size_t f = 0; f < fields; ++f) {
      const size_t bytes = static_cast<size_t>(batch * loader.loaded_field(static_cast<int>(f)).record_bytes());
      s.device.emplace_back(device, bytes, compute);  // compute reads it last: its order protects reuse
      s.staging.emplace_back(bytes, true);
      s.batch.fields.push_back(s.device.back().get());
    }
    TB_CUDA_CHECK(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming));
    TB_CUDA_CHECK(cudaEventCreateWithFlags(&s.consumed, cudaEventDisableTiming));
    // Start "already done" so the first waits pass.
    TB_CUDA_CHECK(cudaEventRecord(s.copied, copy_));
    TB_CUDA_CHECK(cudaEventRecord(s.consumed, compute_));
  }
}

DevicePrefetcher::~DevicePrefetcher() {
  if (copy_) cudaStreamSynchronize(copy_);
  for (auto& s : slots_) {
    if (s.copied) cudaEventDestroy(s.copied);
    if (s.consumed) cudaEventDestroy(s.consumed);
  }
  if (copy_) cudaStreamDestroy(copy_);
}

void DevicePrefetcher::start_epoch() {
  queued_.clear();
  loader_done_ = false;
  while (queued_.size() < slots_.size() && issue()) {
  }
}

// Takes the next host batch and starts its copy into the next ring slot.
bool DevicePrefetcher::issue() {
  if (loader_done_) return false;
  const Batch* b = loader_.next();
  if (!b) {
    loader_done_ = true;
    return false;
  }
  const int k = static_cast<int>(issued_++ % static_cast<std::int64_t>(slots_.size()));
  Slot& s = slots_[static_cast<size_t>(k)];
  // The staging buffer was last used by the copy issued one ring ago; it is normally long done.
  TB_CUDA_CHECK(cudaEventSynchronize(s.copied));
  TB_CUDA_CHECK(cudaStreamWaitEvent(copy_, s.consumed, 0));  // compute is done reading this slot
  for (size_t f = 0; f < s.device.size(); ++f) {
    const size_t bytes = static_cast<size_t>(b->size * loader_.loaded_field(static_cast<int>(f)).record_bytes());
    std::memcpy(s.staging[f].data(), b->data[f].data(), bytes);  // the loader reuses its buffer on its next call
    TB_CUDA_CHECK(cudaMemcpyAsync(s.device[f].get(), s.staging[f].data(), bytes, cudaMemcpyHostToDevice, copy_));
  }
  TB_CUDA_CHECK(cudaEventRecord(s.copied, copy_));
  s.batch.size = b->size;
  s.batch.slot = k;
  s.batch.gather_seconds = b->gather_seconds;
  queued_.push_back(k);
  return true;
}

std::optional<DeviceBatch> DevicePrefetcher::next() {
  if (queued_.empty() && !issue()) return std::nullopt;
  const int k = queued_.front();
  queued_.pop_front();
  Slot& s = slots_[static_cast<size_t>(k)];
  TB_CUDA_CHECK(cudaStreamWaitEvent(compute_, s.copied, 0));
  return s.batch;
}

std::int64_t DevicePrefetcher::device_bytes() const {
  std::int64_t n = 0;
  for (const Slot& s : slots_)
    for (const DeviceBuffer& d : s.device) n += static_cast<std::int64_t>(d.bytes());
  return n;
}

void DevicePrefetcher::release(const DeviceBatch& batch) {
  if (batch.slot < 0) return;
  TB_CUDA_CHECK(cudaEventRecord(slots_[static_cast<size_t>(batch.slot)].consumed, compute_));
  // Refill only now: the slot handed out last is the next one the ring writes, and its copy
  // must be ordered after this release, not after the previous one.
  issue();
}

}  // namespace tb
