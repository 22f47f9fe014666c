// One CUDA graph capture of a stream, as a scope. Leaving the scope before
// finish() (an exception while the step is recorded) ends the capture and
// discards what was recorded, so the stream is never left capturing; finish()
// reports a capture or instantiation that failed instead of dropping the step.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "cuda/cuda_check.h"

namespace tb::cuda {

class StreamCapture {
 public:
  explicit StreamCapture(cudaStream_t stream) : stream_(stream) {
    TB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  }
  ~StreamCapture() {
    if (!open_) return;
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(stream_, &graph);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();  // the capture's own error, if any, is not the caller's
  }
  StreamCapture(const StreamCapture&) = delete;
  StreamCapture& operator=(const StreamCapture&) = delete;

  // Ends the capture and instantiates the graph. Null, with the reason in *why, when either failed:
  // nothing recorded has run, so the caller must run the work itself.
  cudaGraphExec_t finish(std::string* why) {
    open_ = false;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    cudaError_t err = cudaStreamEndCapture(stream_, &graph);
    if (err == cudaSuccess) err = cudaGraphInstantiate(&exec, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (err == cudaSuccess) return exec;
    cudaGetLastError();
    *why = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    return nullptr;
  }

 private:
  cudaStream_t stream_;
  bool open_ = true;
};

}  // namespace tb::cuda
