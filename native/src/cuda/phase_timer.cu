#include "cuda/phase_timer.h"

#include "cuda/cuda_check.h"

namespace tb::cuda {

PhaseTimer::PhaseTimer(cudaStream_t stream, bool synchronous) : stream_(stream), sync_(synchronous) {}

PhaseTimer::~PhaseTimer() {
  for (cudaEvent_t e : free_) cudaEventDestroy(e);
  for (cudaEvent_t e : used_) cudaEventDestroy(e);
}

cudaEvent_t PhaseTimer::take() {
  cudaEvent_t e = nullptr;
  if (!free_.empty()) {
    e = free_.back();
    free_.pop_back();
  } else {
    TB_CUDA_CHECK(cudaEventCreate(&e));
  }
  used_.push_back(e);
  return e;
}

void PhaseTimer::begin() {
  if (paused_) return;
  if (sync_) {
    TB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    last_host_ = std::chrono::steady_clock::now();
    return;
  }
  last_ = take();
  TB_CUDA_CHECK(cudaEventRecord(last_, stream_));
}

void PhaseTimer::mark(Phase p) {
  if (paused_) return;
  if (sync_) {
    TB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    const auto now = std::chrono::steady_clock::now();
    host_seconds_[p] += std::chrono::duration<double>(now - last_host_).count();
    last_host_ = now;
    return;
  }
  if (!last_) begin();
  cudaEvent_t e = take();
  TB_CUDA_CHECK(cudaEventRecord(e, stream_));
  spans_.push_back({p, last_, e});
  last_ = e;
}

void PhaseTimer::collect(double* seconds) {
  for (int p = 0; p < kPhaseCount; ++p) {
    seconds[p] += host_seconds_[p];
    host_seconds_[p] = 0;
  }
  for (const Span& s : spans_) {
    float ms = 0;
    TB_CUDA_CHECK(cudaEventElapsedTime(&ms, s.from, s.to));
    seconds[s.phase] += ms / 1000.0;
  }
  spans_.clear();
  // Every event is complete now; keep the last as the start of the next span.
  for (cudaEvent_t e : used_)
    if (e != last_) free_.push_back(e);
  used_.clear();
  if (last_) used_.push_back(last_);
}

}  // namespace tb::cuda
