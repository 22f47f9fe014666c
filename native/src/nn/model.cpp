#include "nn/model.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "core/rng.h"
#include "core/threads.h"
#include "nn/memory_model.h"

namespace tb {

const char* node_kind_name(NodeKind k) {
  switch (k) {
    case NodeKind::Input: return "input";
    case NodeKind::Conv: return "conv2d";
    case NodeKind::BatchNorm: return "batchnorm";
    case NodeKind::Relu: return "relu";
    case NodeKind::Add: return "add";
    case NodeKind::GlobalAvgPool: return "global_avgpool";
    case NodeKind::Flatten: return "flatten";
    case NodeKind::Linear: return "linear";
    case NodeKind::Dropout: return "dropout";
  }
  return "unknown";
}

std::int64_t ParamEntry::size() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

Model::Model(const ModelSpec& spec, std::uint64_t seed) : spec_(spec) {
  if (spec.family == "mlp") build_mlp();
  else if (spec.family == "cnn") build_cnn();
  else build_resnet();
  for (Node& n : nodes_) {
    switch (n.kind) {
      case NodeKind::Input: n.channels_last = spec.family != "mlp"; break;
      case NodeKind::Conv: n.channels_last = true; break;
      case NodeKind::BatchNorm:
      case NodeKind::Relu:
      case NodeKind::Add:
      case NodeKind::Dropout: n.channels_last = nodes_[n.inputs[0]].channels_last; break;
      default: n.channels_last = false; break;
    }
    for (int in : n.inputs) ++nodes_[in].consumers;
    n.needs_grad = n.weight >= 0;
    for (int in : n.inputs) n.needs_grad = n.needs_grad || nodes_[in].needs_grad;
  }
  // Allocated once the whole spec has been counted: a spec over kMaxParams is refused by its
  // arithmetic, before any of its memory exists (growing the block layer by layer cost seconds
  // and gigabytes before the refusal).
  params_.assign(static_cast<size_t>(n_params_), 0.0f);
  buffers_.assign(static_cast<size_t>(n_buffers_), 0.0f);
  grads_.assign(params_.size(), 0.0f);
  init_params(seed);
}

int Model::add(Node node) {
  nodes_.push_back(std::move(node));
  return static_cast<int>(nodes_.size()) - 1;
}

// More parameters than any model of this workbench has (4 GiB of fp32): a spec this large is a
// mistake or an attack, refused before its memory is allocated (which blocked the host for seconds).
constexpr std::int64_t kMaxParams = std::int64_t(1) << 30;

std::int64_t Model::param(const std::string& name, std::vector<std::int64_t> shape, ParamRole role) {
  std::int64_t n = 1;
  for (auto d : shape) {
    TB_CHECK(d > 0 && n <= kMaxParams / d, ErrorCode::BadInput,
             "the model is too large: " + name + " alone would have more than " + std::to_string(kMaxParams) + " parameters");
    n *= d;
  }
  TB_CHECK(n_params_ + n <= kMaxParams, ErrorCode::BadInput,
           "the model is too large: more than " + std::to_string(kMaxParams) + " parameters by " + name);
  ParamEntry e{name, n_params_, std::move(shape), role};
  n_params_ += n;
  entries_.push_back(e);
  return e.offset;
}

std::int64_t Model::buffer(const std::string& name, std::vector<std::int64_t> shape, ParamRole role) {
  ParamEntry e{name, n_buffers_, std::move(shape), role};
  TB_CHECK(n_buffers_ + e.size() <= kMaxParams, ErrorCode::BadInput, "the model is too large: more than " + std::to_string(kMaxParams) + " buffer values by " + name);
  n_buffers_ += e.size();
  entries_.push_back(e);
  return e.offset;
}

int Model::simple(NodeKind kind, std::vector<int> inputs, Dims dims, double p) {
  Node n;
  n.kind = kind;
  n.name = node_kind_name(kind);
  n.inputs = std::move(inputs);
  n.dims = dims;
  n.p = p;
  return add(std::move(n));
}

int Model::conv(const std::string& name, int in, int out_c, int k, int stride, int pad, bool bias) {
  const Dims d = nodes_[in].dims;
  Node n;
  n.kind = NodeKind::Conv;
  n.name = name;
  n.inputs = {in};
  n.geom = ConvGeom{0, d.c, d.h, d.w, out_c, k, k, stride, pad};
  if (n.geom.OH() < 1 || n.geom.OW() < 1) {
    TB_THROW(ErrorCode::BadInput, "layer " + name + ": a " + std::to_string(k) + "x" + std::to_string(k) +
                                      " convolution with stride " + std::to_string(stride) + " does not fit a " +
                                      std::to_string(d.h) + "x" + std::to_string(d.w) + " input");
  }
  n.dims = Dims{out_c, n.geom.OH(), n.geom.OW()};
  n.weight = param(name + ".weight", {out_c, d.c, k, k}, ParamRole::Weight);
  if (bias) n.bias = param(name + ".bias", {out_c}, ParamRole::Bias);
  return add(std::move(n));
}

int Model::batchnorm(const std::string& name, int in) {
  Node n;
  n.kind = NodeKind::BatchNorm;
  n.name = name;
  n.inputs = {in};
  n.dims = nodes_[in].dims;
  n.weight = param(name + ".weight", {n.dims.c}, ParamRole::BnGamma);
  n.bias = param(name + ".bias", {n.dims.c}, ParamRole::BnBeta);
  n.running_mean = buffer(name + ".running_mean", {n.dims.c}, ParamRole::RunningMean);
  n.running_var = buffer(name + ".running_var", {n.dims.c}, ParamRole::RunningVar);
  return add(std::move(n));
}

int Model::relu(int in) { return simple(NodeKind::Relu, {in}, nodes_[in].dims); }

int Model::linear(const std::string& name, int in, int out_features, bool bias) {
  const Dims d = nodes_[in].dims;
  if (d.h != 1 || d.w != 1) TB_THROW(ErrorCode::Internal, "linear " + name + " needs flattened input");
  Node n;
  n.kind = NodeKind::Linear;
  n.name = name;
  n.inputs = {in};
  n.dims = Dims{out_features, 1, 1};
  n.weight = param(name + ".weight", {out_features, d.c}, ParamRole::Weight);
  if (bias) n.bias = param(name + ".bias", {out_features}, ParamRole::Bias);
  return add(std::move(n));
}

static Dims input_as_dims(const std::vector<int>& input) {
  if (input.size() == 1) return Dims{input[0], 1, 1};
  if (input.size() == 3) return Dims{input[0], input[1], input[2]};
  std::int64_t n = 1;
  for (int v : input) n *= v;
  return Dims{static_cast<int>(n), 1, 1};
}

static Dims flat(const Dims& d) { return Dims{static_cast<int>(d.size()), 1, 1}; }

static Head task_head(const ModelSpec& spec, int node) {
  Head h;
  h.name = "logits";
  h.node = node;
  h.loss = spec.task == Task::Classification ? LossKind::SoftmaxCE : LossKind::Mse;
  h.target = "y";
  return h;
}

void Model::build_mlp() {
  const Dims in = input_as_dims(spec_.input);
  if (in.size() > (1 << 24)) TB_THROW(ErrorCode::BadInput, "spec.input has more than 2^24 values per sample");
  int x = simple(NodeKind::Input, {}, in);
  if (in.h != 1 || in.w != 1) x = simple(NodeKind::Flatten, {x}, flat(in));
  for (size_t i = 0; i < spec_.mlp.hidden.size(); ++i) {
    x = relu(linear("layers." + std::to_string(i), x, spec_.mlp.hidden[i], true));
    if (spec_.mlp.dropout > 0) x = simple(NodeKind::Dropout, {x}, nodes_[x].dims, spec_.mlp.dropout);
  }
  heads_.push_back(task_head(spec_, linear("out", x, spec_.outputs, true)));
}

void Model::build_cnn() {
  const CnnSpec& c = spec_.cnn;
  int x = simple(NodeKind::Input, {}, input_as_dims(spec_.input));
  for (size_t i = 0; i < c.channels.size(); ++i) {
    const std::string name = "features." + std::to_string(i);
    x = conv(name + ".conv", x, c.channels[i], c.kernel, c.strides[i], c.kernel / 2, !c.batch_norm);
    if (c.batch_norm) x = batchnorm(name + ".bn", x);
    x = relu(x);
  }
  x = simple(NodeKind::Flatten, {x}, flat(nodes_[x].dims));
  if (c.hidden > 0) {
    x = relu(linear("fc", x, c.hidden, true));
    if (c.dropout > 0) x = simple(NodeKind::Dropout, {x}, nodes_[x].dims, c.dropout);
  }
  heads_.push_back(task_head(spec_, linear("out", x, spec_.outputs, true)));
}

void Model::build_resnet() {
  const ResnetSpec& r = spec_.resnet;
  auto conv_bn_relu = [&](const std::string& name, const std::string& bn_name, int in, int out_c, int k, int stride,
                          bool with_relu) {
    int y = batchnorm(bn_name, conv(name, in, out_c, k, stride, k / 2, false));
    return with_relu ? relu(y) : y;
  };
  int x = simple(NodeKind::Input, {}, input_as_dims(spec_.input));
  x = conv_bn_relu("stem.conv", "stem.bn", x, r.stem_width, 3, 1, true);
  int channels = r.stem_width;
  for (size_t s = 0; s < r.layers.size(); ++s) {
    for (int b = 0; b < r.layers[s]; ++b) {
      const std::string p = "stages." + std::to_string(s) + "." + std::to_string(b) + ".";
      const int stride = b == 0 ? r.strides[s] : 1;
      const int width = r.widths[s], out_c = width * r.expansion;
      int y = conv_bn_relu(p + "conv1", p + "bn1", x, width, 1, 1, true);
      y = conv_bn_relu(p + "conv2", p + "bn2", y, width, 3, stride, true);
      y = conv_bn_relu(p + "conv3", p + "bn3", y, out_c, 1, 1, false);
      int shortcut = x;
      if (stride != 1 || channels != out_c) {
        shortcut = conv_bn_relu(p + "shortcut.conv", p + "shortcut.bn", x, out_c, 1, stride, false);
      }
      x = relu(simple(NodeKind::Add, {y, shortcut}, nodes_[y].dims));
      channels = out_c;
    }
  }
  const int trunk = x;
  auto head = [&](const std::string& name, int outputs) {
    int h = relu(conv(name + ".conv", trunk, r.head_channels, 3, 1, 1, true));
    h = simple(NodeKind::GlobalAvgPool, {h}, Dims{r.head_channels, 1, 1});
    return linear(name + ".fc", h, outputs, true);
  };
  Head policy;
  policy.name = "policy";
  policy.node = head("policy_head", r.policy_classes);
  policy.loss = LossKind::SoftmaxCESoft;
  policy.target = "policy";
  Head value;
  value.name = "value";
  value.node = head("value_head", 1);
  value.loss = LossKind::BceLogits;
  value.target = "value";
  heads_ = {policy, value};
}

void Model::init_params(std::uint64_t seed) {
  // He-normal weights for layers followed by ReLU (the common case here), zero
  // biases, BN as identity; running variance starts at 1 like PyTorch.
  for (size_t i = 0; i < entries_.size(); ++i) {
    const ParamEntry& e = entries_[i];
    float* p = (e.is_buffer() ? buffers_.data() : params_.data()) + e.offset;
    switch (e.role) {
      case ParamRole::RunningVar:
      case ParamRole::BnGamma: std::fill(p, p + e.size(), 1.0f); break;
      case ParamRole::RunningMean:
      case ParamRole::BnBeta:
      case ParamRole::Bias: std::fill(p, p + e.size(), 0.0f); break;
      case ParamRole::Weight: {
        std::int64_t fan_in = 1;
        for (size_t d = 1; d < e.shape.size(); ++d) fan_in *= e.shape[d];
        Rng rng = Rng::derive(seed, i + 1);
        const double stdev = std::sqrt(2.0 / static_cast<double>(fan_in));
        for (std::int64_t j = 0; j < e.size(); ++j) p[j] = static_cast<float>(rng.normal() * stdev);
        break;
      }
    }
  }
}

double Model::flops_per_sample() const {
  double flops = 0;
  for (const Node& n : nodes_) {
    const double out = static_cast<double>(n.dims.size());
    switch (n.kind) {
      case NodeKind::Conv: flops += 2.0 * out * n.geom.C * n.geom.KH * n.geom.KW + (n.bias >= 0 ? out : 0); break;
      case NodeKind::Linear: flops += 2.0 * out * nodes_[n.inputs[0]].dims.size() + (n.bias >= 0 ? out : 0); break;
      case NodeKind::BatchNorm: flops += 2.0 * out; break;
      case NodeKind::Relu:
      case NodeKind::Add:
      case NodeKind::Dropout: flops += out; break;
      case NodeKind::GlobalAvgPool: flops += static_cast<double>(nodes_[n.inputs[0]].dims.size()); break;
      default: break;
    }
  }
  return flops;
}

namespace {
// Kernel taps of a convolution that land inside the input, over all output pixels: the multiply-adds a
// convolution must do (a tap in the padding multiplies a zero; the input gradient's kernel skips those taps).
double conv_valid_taps(const ConvGeom& g) {
  const auto along = [](int in, int out, int k, int stride, int pad) {
    double taps = 0;
    for (int o = 0; o < out; ++o)
      for (int t = 0; t < k; ++t) {
        const int i = o * stride - pad + t;
        taps += (i >= 0 && i < in) ? 1 : 0;
      }
    return taps;
  };
  return along(g.H, g.OH(), g.KH, g.stride, g.pad) * along(g.W, g.OW(), g.KW, g.stride, g.pad);
}
}  // namespace

double Model::training_flops_per_sample() const {
  // Three forward passes' worth, each convolution's counted over the taps inside its input only, less the input
  // gradients backward() never computes.
  double flops = 3.0 * flops_per_sample();
  for (const Node& n : nodes_) {
    if (n.kind != NodeKind::Conv && n.kind != NodeKind::Linear) continue;
    const double out = static_cast<double>(n.dims.size());
    const double counted = n.kind == NodeKind::Conv ? 2.0 * out * n.geom.C * n.geom.KH * n.geom.KW : 2.0 * out * nodes_[n.inputs[0]].dims.size();
    const double needed = n.kind == NodeKind::Conv ? 2.0 * n.geom.O * n.geom.C * conv_valid_taps(n.geom) : counted;
    flops -= 3.0 * (counted - needed);
    if (!nodes_[n.inputs[0]].needs_grad) flops -= needed;
  }
  return flops;
}

void Model::forward(const float* x, int B, bool train, Rng* rng, ThreadPool* pool) {
  if (B != batch_) {
    if (budget_) {
      // Charged before anything is allocated, at the sizes the memory model predicts (they agree to the byte).
      const MemoryBreakdown m = predict_memory(*this, B, false, 0, 0);
      const std::int64_t bytes = m.activations + m.activation_grads + m.workspace;
      if (bytes > charged_) budget_->charge(bytes - charged_, "activations and workspace");
      else budget_->release(charged_ - bytes);
      charged_ = bytes;
    }
    for (Node& n : nodes_) {
      // Slack past the last row: the convolution's weight-gradient kernel loads whole vectors there.
      n.out.assign(static_cast<size_t>(B * n.dims.size() + kConvRowSlack), 0.0f);
      n.grad.assign(n.out.size(), 0.0f);
      if (n.kind == NodeKind::Dropout) n.mask.assign(static_cast<size_t>(B) * n.dims.size(), 0.0f);
    }
    batch_ = B;
  }
  for (Node& n : nodes_) {
    n.grad_written = false;
    const std::int64_t count = static_cast<std::int64_t>(B) * n.dims.size();
    const float* in = n.inputs.empty() ? nullptr : nodes_[n.inputs[0]].out.data();
    float* P = params_.data();
    switch (n.kind) {
      case NodeKind::Input:
        if (n.channels_last && n.dims.c > 1) to_channels_last(n.out.data(), x, B, n.dims.c, n.dims.h * n.dims.w, pool);
        else std::copy(x, x + count, n.out.begin());
        break;
      case NodeKind::Conv:
        n.geom.N = B;
        conv2d_forward(n.out.data(), in, P + n.weight, n.bias >= 0 ? P + n.bias : nullptr, n.geom, n.ws, pool);
        break;
      case NodeKind::BatchNorm: {
        // Channels-last: each pixel is one row of C values, i.e. one "sample" of (C) features.
        const int C = n.dims.c, HW = n.channels_last ? 1 : n.dims.h * n.dims.w;
        const int NB = n.channels_last ? B * n.dims.h * n.dims.w : B;
        float* rm = buffers_.data() + n.running_mean;
        float* rv = buffers_.data() + n.running_var;
        if (train) {
          n.save_mean.resize(C);
          n.save_invstd.resize(C);
          batchnorm_forward_train(n.out.data(), n.save_mean.data(), n.save_invstd.data(), in, P + n.weight, P + n.bias,
                                  rm, rv, NB, C, HW, 0.1f, 1e-5f, pool);
        } else {
          batchnorm_forward_eval(n.out.data(), in, P + n.weight, P + n.bias, rm, rv, NB, C, HW, 1e-5f, pool);
        }
        break;
      }
      case NodeKind::Relu: relu_forward(n.out.data(), in, count, pool); break;
      case NodeKind::Add: add_forward(n.out.data(), in, nodes_[n.inputs[1]].out.data(), count, pool); break;
      case NodeKind::GlobalAvgPool: {
        const Node& src = nodes_[n.inputs[0]];
        if (src.channels_last) global_avgpool_nhwc_forward(n.out.data(), in, B, src.dims.c, src.dims.h * src.dims.w);
        else global_avgpool_forward(n.out.data(), in, B, src.dims.c, src.dims.h * src.dims.w);
        break;
      }
      case NodeKind::Flatten: {
        const Node& src = nodes_[n.inputs[0]];
        // PyTorch's flatten order (C, H, W) per sample, so the dense layer's weights mean the same there.
        if (src.channels_last && src.dims.c > 1) to_channels_first(n.out.data(), in, B, src.dims.c, src.dims.h * src.dims.w);
        else std::copy(in, in + count, n.out.begin());
        break;
      }
      case NodeKind::Linear:
        linear_forward(n.out.data(), in, P + n.weight, n.bias >= 0 ? P + n.bias : nullptr, B,
                       static_cast<int>(nodes_[n.inputs[0]].dims.size()), n.dims.c, pool);
        break;
      case NodeKind::Dropout: dropout_forward(n.out.data(), n.mask.data(), in, count, train ? n.p : 0.0, rng); break;
    }
  }
}

float* Model::output_grad(const Head& h) {
  Node& n = nodes_[h.node];
  n.grad_written = true;
  return n.grad.data();
}

void Model::free_batch_buffers() {
  for (Node& n : nodes_) {
    for (std::vector<float>* v : {&n.out, &n.grad, &n.mask, &n.save_mean, &n.save_invstd, &n.ws.col})
      std::vector<float>().swap(*v);
    n.ws.col_holds_batch = false;
  }
  std::vector<float>().swap(scratch_);
  batch_ = 0;
  if (budget_) budget_->release(charged_);
  charged_ = 0;
}

void Model::zero_grads() { std::fill(grads_.begin(), grads_.end(), 0.0f); }

// Where the gradient for `input` goes: straight into its buffer the first time
// (ops overwrite), into scratch when another consumer already wrote it (then added).
float* Model::grad_target(int input, std::int64_t n, std::vector<float>& scratch, bool* accumulate) {
  Node& in = nodes_[input];
  if (!in.grad_written) {
    in.grad_written = true;
    *accumulate = false;
    return in.grad.data();
  }
  scratch.resize(static_cast<size_t>(n));
  *accumulate = true;
  return scratch.data();
}

void Model::backward(ThreadPool* pool) {
  const int B = batch_;
  float* P = params_.data();
  float* G = grads_.data();
  for (int i = static_cast<int>(nodes_.size()) - 1; i > 0; --i) {
    Node& n = nodes_[i];
    if (!n.grad_written) continue;
    const float* dout = n.grad.data();
    const std::int64_t count = static_cast<std::int64_t>(B) * n.dims.size();
    auto to_input = [&](int which, std::int64_t in_count, auto&& write) {
      const int input = n.inputs[which];
      if (!nodes_[input].needs_grad) return;  // no gradient for the data or what only transforms it
      bool acc = false;
      float* dst = grad_target(input, in_count, scratch_, &acc);
      write(dst);
      if (acc) add_into(nodes_[input].grad.data(), scratch_.data(), in_count, pool);
    };
    const Node& src = nodes_[n.inputs[0]];
    const std::int64_t in_count = static_cast<std::int64_t>(B) * src.dims.size();
    switch (n.kind) {
      case NodeKind::Input: break;
      case NodeKind::Conv: {
        const bool need_din = src.needs_grad;
        float* db = n.bias >= 0 ? G + n.bias : nullptr;
        if (!need_din) {
          conv2d_backward<float>(nullptr, G + n.weight, db, dout, src.out.data(), P + n.weight, n.geom, n.ws, pool, true);
        } else {
          // A second consumer's gradient is added by the convolution itself (GEMM with beta 1, col2im
          // without clearing), not written to scratch and added in another pass.
          Node& in = nodes_[n.inputs[0]];
          const bool add_din = in.grad_written;
          in.grad_written = true;
          conv2d_backward(in.grad.data(), G + n.weight, db, dout, src.out.data(), P + n.weight, n.geom, n.ws, pool, true,
                          add_din);
        }
        break;
      }
      case NodeKind::BatchNorm: {
        // With the following ReLU folded in, the gradient and mask come from that ReLU.
        const Node* relu = n.fused_relu >= 0 ? &nodes_[n.fused_relu] : nullptr;
        n.fused_relu = -1;
        to_input(0, in_count, [&](float* din) {
          const int hw = n.dims.h * n.dims.w;
          batchnorm_backward(din, G + n.weight, G + n.bias, relu ? relu->grad.data() : dout, src.out.data(), P + n.weight,
                             n.save_mean.data(), n.save_invstd.data(), n.channels_last ? B * hw : B, n.dims.c,
                             n.channels_last ? 1 : hw, pool, relu ? relu->out.data() : nullptr);
        });
        break;
      }
      case NodeKind::Relu:
        if (src.kind == NodeKind::BatchNorm && src.consumers == 1 && !src.grad_written) {
          // The batch norm's backward does this ReLU's too, reading its gradient and output: one pass less.
          Node& bn = nodes_[n.inputs[0]];
          bn.grad_written = true;
          bn.fused_relu = i;
          break;
        }
        to_input(0, in_count, [&](float* din) { relu_backward(din, dout, n.out.data(), count, pool); });
        break;
      case NodeKind::Add: {
        // Both inputs get this gradient. The first input's buffer, when nothing wrote it yet, is swapped
        // with this node's (no copy; `dout` still points at the data, now owned by the input).
        Node& a = nodes_[n.inputs[0]];
        if (!a.grad_written && a.kind != NodeKind::Input && n.inputs[0] != n.inputs[1]) {
          a.grad.swap(n.grad);
          a.grad_written = true;
        } else {
          to_input(0, in_count, [&](float* din) { copy_values(din, dout, count, pool); });
        }
        to_input(1, in_count, [&](float* din) { copy_values(din, dout, count, pool); });
        break;
      }
      case NodeKind::GlobalAvgPool:
        to_input(0, in_count, [&](float* din) {
          if (src.channels_last) global_avgpool_nhwc_backward(din, dout, B, src.dims.c, src.dims.h * src.dims.w);
          else global_avgpool_backward(din, dout, B, src.dims.c, src.dims.h * src.dims.w);
        });
        break;
      case NodeKind::Flatten:
        to_input(0, in_count, [&](float* din) {
          if (src.channels_last && src.dims.c > 1) to_channels_last(din, dout, B, src.dims.c, src.dims.h * src.dims.w);
          else std::copy(dout, dout + count, din);
        });
        break;
      case NodeKind::Linear: {
        const int I = static_cast<int>(src.dims.size());
        float* db = n.bias >= 0 ? G + n.bias : nullptr;
        if (!src.needs_grad) {
          linear_backward<float>(nullptr, G + n.weight, db, dout, src.out.data(), P + n.weight, B, I, n.dims.c, pool);
        } else {
          to_input(0, in_count, [&](float* din) {
            linear_backward(din, G + n.weight, db, dout, src.out.data(), P + n.weight, B, I, n.dims.c, pool);
          });
        }
        break;
      }
      case NodeKind::Dropout:
        to_input(0, in_count, [&](float* din) { dropout_backward(din, dout, n.mask.data(), count); });
        break;
    }
  }
}

}  // namespace tb
