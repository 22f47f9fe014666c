// The model graph on one CUDA device: the host Model's nodes, parameters
// and running statistics mirrored in device memory, with forward and backward
// strung from the kernels in kernels.h. Same node order, same gradient rules
// (overwrite the first time, accumulate after), so results match the CPU
// backend. A Linear, BatchNorm or Conv whose only consumer is a ReLU writes
// straight into the ReLU's output with the activation applied (one pass fewer).
#pragma once
#include <cuda_runtime.h>

#include <vector>

#include "cuda/allocator.h"
#include "cuda/gemm_engine.h"
#include "cuda/op_profile.h"
#include "cuda/train_state.h"
#include "nn/memory_model.h"
#include "nn/model.h"

namespace tb::cuda {

class DeviceModel {
 public:
  DeviceModel(const Model& host, int device, cudaStream_t stream, GemmEngine& gemm);

  void upload(const Model& host);
  void download(Model& host) const;
  float* params() { return params_.as<float>(); }
  float* grads() { return grads_.as<float>(); }
  std::int64_t param_count() const { return param_count_; }

  // The im2col workspace is shared by every convolution and chunked over the batch so it stays under
  // this many floats (256 MiB).
  static constexpr std::int64_t kColBudget = std::int64_t(1) << 26;
  // A smaller budget forces the chunked path (tests); takes effect at the next reserve().
  void set_col_budget(std::int64_t floats);

  // Sizes the activations for batches up to B; true when buffers moved (a captured graph is then stale).
  bool reserve(int B);
  // x: (B, input size) fp32 on the device. st supplies the step's dropout seed; micro_batch (0-based
  // within the optimizer step) keeps the masks of accumulated micro-batches apart.
  void forward(const float* x, int B, bool train, const TrainState* st, int micro_batch);
  const float* output(const Head& h) const;
  float* output_grad(const Head& h);
  void backward();
  void zero_grads();

  // Times every node's forward and backward by op kind (measurement mode); null to stop.
  void set_profile(OpProfile* profile) { profile_ = profile; }

  // Bytes held now by kind (batch data and optimizer state are added by the caller).
  MemoryBreakdown measured() const;
  // The same, from the shapes alone, for a batch of B.
  static MemoryBreakdown predict(const Model& host, int B);
  // The GEMM engine's split-K workspace for the same batch: the largest slices x M x N over every GEMM the
  // model runs (16-bit precisions only; fp32 GEMMs are never split), on a device of `sms` SMs.
  static std::int64_t predict_split_bytes(const Model& host, int B, int sms);

 private:
  struct DNode {
    DeviceBuffer out, grad, mask, mean, invstd;
    float* out_ptr = nullptr;  // out, the fused ReLU's out, or the input batch
    float* grad_ptr = nullptr;  // grad, or the buffer of the consumer that passes its gradient on (grad_owners)
    bool fuse_relu = false;    // writes relu(result) into its consumer's buffer
    bool fused_away = false;   // a ReLU whose producer already applied it
    int residual = -1, sum = -1;  // a batch norm that adds this node's output and writes its Add's result
    bool summed_away = false;     // an Add whose batch norm input already wrote the sum
    bool grad_written = false;
  };
  float* grad_target(int input, bool* accumulate);
  void conv_forward(const Node& n, const float* in, float* out, bool relu);
  void conv_backward(const Node& n, const float* in, const float* dout, float* din);

  const Model& host_;
  int device_;
  cudaStream_t stream_;
  GemmEngine& gemm_;
  std::int64_t param_count_ = 0;
  DeviceBuffer params_, grads_, buffers_;
  std::vector<DNode> nodes_;
  DeviceBuffer scratch_, col_, tmp_;  // gradient scratch and the shared im2col workspace
  int batch_ = 0, capacity_ = 0;
  std::int64_t col_budget_ = kColBudget;
  OpProfile* profile_ = nullptr;
};

}  // namespace tb::cuda
