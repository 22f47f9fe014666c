// A model is a list of nodes in topological order (a small DAG: residual adds
// and two heads need more than a chain). Parameters and their gradients each
// live in one contiguous block with a table of named offsets, so the
// optimizer is one flat loop and zeroing gradients is one fill.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cpu/ops.h"
#include "nn/memory_budget.h"
#include "nn/spec.h"

namespace tb {

class Rng;
class ThreadPool;

enum class NodeKind { Input, Conv, BatchNorm, Relu, Add, GlobalAvgPool, Flatten, Linear, Dropout };
const char* node_kind_name(NodeKind k);

// Per-sample shape: (C, H, W), or (D, 1, 1) for features.
struct Dims {
  int c = 1, h = 1, w = 1;
  std::int64_t size() const { return static_cast<std::int64_t>(c) * h * w; }
};

struct Node {
  NodeKind kind = NodeKind::Input;
  std::string name;
  std::vector<int> inputs;
  Dims dims;
  std::int64_t weight = -1, bias = -1;               // offsets into params/grads
  std::int64_t running_mean = -1, running_var = -1;  // offsets into buffers
  ConvGeom geom{};
  double p = 0;  // dropout probability
  // Activations channels-last (N, H, W, C), one row per pixel (convolution models' spatial nodes, see cpu/ops_conv.cpp);
  // otherwise sample-major (N, C, H, W), as the data and the dense layers have them.
  bool channels_last = false;
  int consumers = 0;     // nodes that read this one's output
  // A parameter lies at or upstream of this node, so its output gradient is used (not the data's
  // side of the graph: the MLP's flatten of its input needs none).
  bool needs_grad = false;
  int fused_relu = -1;   // this backward pass: the ReLU whose backward this batch norm's backward does
  // Run-time state, sized for the current batch.
  std::vector<float> out, grad, mask, save_mean, save_invstd;
  ConvWorkspace<float> ws;
  bool grad_written = false;
};

enum class ParamRole { Weight, Bias, BnGamma, BnBeta, RunningMean, RunningVar };

struct ParamEntry {
  std::string name;  // PyTorch-style: "stages.0.0.conv1.weight"
  std::int64_t offset = 0;
  std::vector<std::int64_t> shape;
  ParamRole role = ParamRole::Weight;
  // Running statistics live in buffers(), are saved in checkpoints, and are not trained.
  bool is_buffer() const { return role == ParamRole::RunningMean || role == ParamRole::RunningVar; }
  std::int64_t size() const;
};

enum class LossKind { SoftmaxCE, SoftmaxCESoft, BceLogits, Mse };

struct Head {
  std::string name;    // "logits", "policy", "value"
  int node = -1;       // the node whose output is this head's prediction
  LossKind loss = LossKind::SoftmaxCE;
  std::string target;  // dataset field holding the targets
  double weight = 1.0;
};

class Model {
 public:
  Model(const ModelSpec& spec, std::uint64_t seed);

  const ModelSpec& spec() const { return spec_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Head>& heads() const { return heads_; }
  const std::vector<ParamEntry>& entries() const { return entries_; }
  std::vector<float>& params() { return params_; }
  std::vector<float>& grads() { return grads_; }
  std::vector<float>& buffers() { return buffers_; }
  const std::vector<float>& params() const { return params_; }
  std::int64_t param_count() const { return static_cast<std::int64_t>(params_.size()); }
  Dims input_dims() const { return nodes_[0].dims; }
  // Forward FLOPs per sample: 2 per multiply-add in convs and linears, plus elementwise work.
  double flops_per_sample() const;
  // Arithmetic one training step must do per sample (the MFU's numerator, the compute floor's work): three forward
  // passes' worth (the forward, the input gradients, the weight gradients), convolutions counted
  // over the kernel taps inside their input (a padding tap multiplies a zero), less the input gradients backward()
  // never computes (a layer reading an input without a gradient, such as the data).
  double training_flops_per_sample() const;

  // x is (B, input size) in float. Dropout draws from rng in training.
  void forward(const float* x, int B, bool train, Rng* rng, ThreadPool* pool);
  const float* output(const Head& h) const { return nodes_[h.node].out.data(); }
  // The loss writes d(loss)/d(output) here before backward().
  float* output_grad(const Head& h);
  // Accumulates (+=) parameter gradients from the head gradients.
  void backward(ThreadPool* pool);
  void zero_grads();

  // Charges the per-batch buffers (activations, their gradients, conv workspace) to `budget`
  // before they are allocated; null stops charging. The caller releases them with free_batch_buffers().
  void set_budget(MemoryBudget* budget) { budget_ = budget; }
  // Frees the per-batch buffers and gives their bytes back, so a run ends at its baseline.
  void free_batch_buffers();

 private:
  int add(Node node);
  std::int64_t param(const std::string& name, std::vector<std::int64_t> shape, ParamRole role);
  std::int64_t buffer(const std::string& name, std::vector<std::int64_t> shape, ParamRole role);
  int conv(const std::string& name, int in, int out_c, int k, int stride, int pad, bool bias);
  int batchnorm(const std::string& name, int in);
  int relu(int in);
  int linear(const std::string& name, int in, int out_features, bool bias);
  int simple(NodeKind kind, std::vector<int> inputs, Dims dims, double p = 0);
  void build_mlp();
  void build_cnn();
  void build_resnet();
  void init_params(std::uint64_t seed);
  float* grad_target(int input, std::int64_t n, std::vector<float>& scratch, bool* accumulate);

  ModelSpec spec_;
  std::vector<Node> nodes_;
  std::vector<Head> heads_;
  std::vector<ParamEntry> entries_;
  std::vector<float> params_, grads_, buffers_;
  // Counted while the spec is built; the blocks are allocated once it is whole.
  std::int64_t n_params_ = 0, n_buffers_ = 0;
  std::vector<float> scratch_;
  int batch_ = 0;
  MemoryBudget* budget_ = nullptr;
  std::int64_t charged_ = 0;  // bytes of the per-batch buffers charged to budget_
};

}  // namespace tb
