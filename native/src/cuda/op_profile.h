// Where a GPU step's time goes by operation (conv2d forward, batchnorm
// backward, ...): CUDA events around every node's forward and backward,
// summed by kind. Only in measurement mode: the events are cheap, but reading
// them per node is what measurement mode is for.
#pragma once
#include <cuda_runtime.h>

#include <map>
#include <string>
#include <vector>

#include "core/json.h"

namespace tb::cuda {

class OpProfile {
 public:
  explicit OpProfile(cudaStream_t stream) : stream_(stream) {}
  ~OpProfile();
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;

  void begin();                        // before one node's work
  void end(const std::string& op);     // after it
  void collect();                      // after the stream was synchronised
  // [{op, ms, share}] sorted by time, shares of the profiled total.
  Json report() const;

 private:
  cudaEvent_t take();
  cudaStream_t stream_;
  std::vector<cudaEvent_t> free_;
  struct Span {
    std::string op;
    cudaEvent_t from, to;
  };
  std::vector<Span> spans_;
  cudaEvent_t open_ = nullptr;
  std::map<std::string, double> ms_;
};

}  // namespace tb::cuda
