// One CUDA graph capture of a stream, as a scope. Leaving the scope before
// finish() (an exception while the step is recorded) ends the capture and
// discards what was recorded, so the stream is never left capturing; finish()
// reports a capture or instantiation that failed instead of dropping the step.
#pragma once
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "cuda/cuda_check.h"

namespace tb::cuda {

// What one captured step launches, by kind of graph node.
struct GraphCensus {
  int kernels = 0, copies = 0, memsets = 0, other = 0;
  int total() const { return kernels + copies + memsets + other; }
};

inline cudaError_t count_nodes(cudaGraph_t graph, GraphCensus* census) {
  size_t n = 0;
  cudaError_t err = cudaGraphGetNodes(graph, nullptr, &n);
  if (err != cudaSuccess) return err;
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0) err = cudaGraphGetNodes(graph, nodes.data(), &n);
  *census = GraphCensus{};
  for (size_t i = 0; i < n && err == cudaSuccess; ++i) {
    cudaGraphNodeType type{};
    err = cudaGraphNodeGetType(nodes[i], &type);
    if (type == cudaGraphNodeTypeKernel) ++census->kernels;
    else if (type == cudaGraphNodeTypeMemcpy) ++census->copies;
    else if (type == cudaGraphNodeTypeMemset) ++census->memsets;
    else ++census->other;
  }
  return err;
}

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
  // nothing recorded has run, so the caller must run the work itself. `census`, when given, counts the
  // recorded graph's nodes: the step's launches, measured rather than estimated.
  cudaGraphExec_t finish(std::string* why, GraphCensus* census = nullptr) {
    open_ = false;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    cudaError_t err = cudaStreamEndCapture(stream_, &graph);
    if (err == cudaSuccess && census) err = count_nodes(graph, census);
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
