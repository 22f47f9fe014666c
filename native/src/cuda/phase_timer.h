// Phase timing on a CUDA stream. Default mode records an event at each phase
// boundary and reads the elapsed times only when asked (at readout, when the
// host waits anyway), so timing never stalls the step. Measurement mode
// synchronises the stream at every boundary and uses the host clock: exact
// phases, at the price of the overlap it removes.
#pragma once
#include <cuda_runtime.h>

#include <chrono>
#include <vector>

#include "train/step_backend.h"

namespace tb::cuda {

class PhaseTimer {
 public:
  PhaseTimer(cudaStream_t stream, bool synchronous);
  ~PhaseTimer();
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

  // Starts a run of phases (at the start of a micro-batch).
  void begin();
  // Ends phase p here; the next phase starts here.
  void mark(Phase p);
  // While a graph is being captured nothing may be recorded on the stream.
  void pause(bool paused) { paused_ = paused; }
  // Adds the seconds of every finished phase to `seconds` (the caller has synchronised the stream).
  void collect(double* seconds);

 private:
  cudaEvent_t take();
  cudaStream_t stream_;
  bool sync_, paused_ = false;
  std::vector<cudaEvent_t> free_, used_;
  struct Span {
    Phase phase;
    cudaEvent_t from, to;
  };
  std::vector<Span> spans_;
  cudaEvent_t last_ = nullptr;
  std::chrono::steady_clock::time_point last_host_;
  double host_seconds_[kPhaseCount] = {};
};

}  // namespace tb::cuda
