#include "cuda/device_model.h"

#include <algorithm>

#include "core/errors.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels.h"

namespace tb::cuda {
namespace {

int conv_chunk(const ConvGeom& g, int B, std::int64_t col_budget) {
  const std::int64_t per_sample = static_cast<std::int64_t>(g.C) * g.KH * g.KW * g.OH() * g.OW();
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(B, col_budget / std::max<std::int64_t>(1, per_sample))));
}

// What each node hands on to a consumer. `relu`: the producer's only consumer is a ReLU, which it applies.
// `residual`: a batch norm whose only consumer is a residual Add whose other input is ready before it (ADR 0020,
// step 4): it adds that input itself and writes the sum (and the Add's ReLU) into the Add's buffer, so the Add
// launches nothing and the batch norm's own output is never stored. -1 elsewhere.
struct Fusion {
  std::vector<bool> relu;
  std::vector<int> residual, sum;  // sum: the Add the batch norm writes for
};

Fusion fusable(const Model& m) {
  const auto& nodes = m.nodes();
  std::vector<int> consumers(nodes.size(), 0), only(nodes.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int in : nodes[i].inputs) ++consumers[static_cast<size_t>(in)], only[static_cast<size_t>(in)] = static_cast<int>(i);
  Fusion f{std::vector<bool>(nodes.size(), false), std::vector<int>(nodes.size(), -1), std::vector<int>(nodes.size(), -1)};
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeKind k = nodes[i].kind;
    if (consumers[i] != 1) continue;
    const Node& next = nodes[static_cast<size_t>(only[i])];
    if ((k == NodeKind::Linear || k == NodeKind::BatchNorm || k == NodeKind::Conv || k == NodeKind::Add) && next.kind == NodeKind::Relu) f.relu[i] = true;
    if (k == NodeKind::BatchNorm && next.kind == NodeKind::Add) {
      const int other = next.inputs[0] == static_cast<int>(i) ? next.inputs[1] : next.inputs[0];
      if (other < static_cast<int>(i)) f.residual[i] = other, f.sum[i] = only[i];
    }
  }
  return f;
}

// Nodes that only pass values on (Add, Flatten, dropout with p = 0) copy nothing (ADR 0020, step 6): an
// input whose only consumer is such a node keeps its gradient in that node's gradient buffer, so the
// gradient arrives there without a copy. Each node's entry names the node whose buffer holds its gradient
// (itself where it has a second consumer, or its consumer computes). Decided from the last node back, so a
// chain of such nodes ends at one buffer.
bool passes_on(const Node& n) { return n.kind == NodeKind::Add || n.kind == NodeKind::Flatten || (n.kind == NodeKind::Dropout && n.p == 0); }

std::vector<int> grad_owners(const Model& m) {
  const auto& nodes = m.nodes();
  std::vector<int> consumers(nodes.size(), 0), owner(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    owner[i] = static_cast<int>(i);
    for (int in : nodes[i].inputs) ++consumers[static_cast<size_t>(in)];
  }
  for (size_t i = nodes.size(); i-- > 0;) {
    if (!passes_on(nodes[i])) continue;
    for (int in : nodes[i].inputs)
      if (consumers[static_cast<size_t>(in)] == 1 && nodes[static_cast<size_t>(in)].kind != NodeKind::Input) owner[static_cast<size_t>(in)] = owner[i];
  }
  return owner;
}

struct Sizes {
  std::int64_t out = 0, grad = 0, mask = 0, stats = 0;  // floats
};

// Every device buffer of the graph for batches of B, by node; predict() and reserve() share it.
std::vector<Sizes> node_sizes(const Model& m, int B, const Fusion& fuse, std::int64_t col_budget, std::int64_t* scratch,
                              std::int64_t* col, std::int64_t* tmp) {
  std::vector<Sizes> sizes(m.nodes().size());
  const std::vector<int> owner = grad_owners(m);
  *scratch = *col = *tmp = 0;
  for (size_t i = 0; i < m.nodes().size(); ++i) {
    const Node& n = m.nodes()[i];
    const std::int64_t values = static_cast<std::int64_t>(B) * n.dims.size();
    Sizes& s = sizes[i];
    if (n.kind == NodeKind::Input) continue;  // the batch itself
    // Flatten's output is its input; so is dropout's whenever it drops nothing (p = 0, or evaluation).
    s.out = fuse.relu[i] || fuse.residual[i] >= 0 || n.kind == NodeKind::Flatten || (n.kind == NodeKind::Dropout && n.p == 0) ? 0 : values;
    s.grad = owner[i] == static_cast<int>(i) ? values : 0;
    if (n.kind == NodeKind::Dropout && n.p > 0) s.mask = values;
    if (n.kind == NodeKind::BatchNorm) s.stats = n.dims.c;
    *scratch = std::max(*scratch, values);
    if (n.kind == NodeKind::Conv) {
      const int chunk = conv_chunk(n.geom, B, col_budget);
      const std::int64_t ohw = static_cast<std::int64_t>(n.geom.OH()) * n.geom.OW();
      *col = std::max(*col, static_cast<std::int64_t>(n.geom.C) * n.geom.KH * n.geom.KW * chunk * ohw);
      *tmp = std::max(*tmp, static_cast<std::int64_t>(n.geom.O) * chunk * ohw);
    }
  }
  return sizes;
}

std::int64_t buffer_floats(const Model& m) {
  std::int64_t n = 0;
  for (const ParamEntry& e : m.entries())
    if (e.is_buffer()) n += e.size();
  return n;
}

DeviceBuffer floats(int device, std::int64_t n, cudaStream_t s) {
  return n > 0 ? DeviceBuffer(device, static_cast<std::size_t>(n) * sizeof(float), s) : DeviceBuffer();
}

}  // namespace

DeviceModel::DeviceModel(const Model& host, int device, cudaStream_t stream, GemmEngine& gemm)
    : host_(host), device_(device), stream_(stream), gemm_(gemm), param_count_(host.param_count()) {
  params_ = floats(device, param_count_, stream);
  grads_ = floats(device, param_count_, stream);
  buffers_ = floats(device, buffer_floats(host), stream);
  nodes_.resize(host.nodes().size());
  const Fusion fuse = fusable(host);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i].fuse_relu = fuse.relu[i];
    nodes_[i].residual = fuse.residual[i];
    nodes_[i].sum = fuse.sum[i];
    for (int in : host.nodes()[i].inputs) {
      if (fuse.relu[static_cast<size_t>(in)]) nodes_[i].fused_away = true;
      if (fuse.residual[static_cast<size_t>(in)] >= 0) nodes_[i].summed_away = true;
    }
  }
  upload(host);
  zero_grads();
}

void DeviceModel::upload(const Model& host) {
  Model& m = const_cast<Model&>(host);  // buffers() has no const overload; nothing is written
  TB_CUDA_CHECK(cudaMemcpyAsync(params_.get(), m.params().data(), m.params().size() * sizeof(float), cudaMemcpyHostToDevice, stream_));
  if (!m.buffers().empty())
    TB_CUDA_CHECK(cudaMemcpyAsync(buffers_.get(), m.buffers().data(), m.buffers().size() * sizeof(float), cudaMemcpyHostToDevice, stream_));
  TB_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void DeviceModel::download(Model& host) const {
  TB_CUDA_CHECK(cudaStreamSynchronize(stream_));
  TB_CUDA_CHECK(cudaMemcpy(host.params().data(), params_.get(), host.params().size() * sizeof(float), cudaMemcpyDeviceToHost));
  if (!host.buffers().empty())
    TB_CUDA_CHECK(cudaMemcpy(host.buffers().data(), buffers_.get(), host.buffers().size() * sizeof(float), cudaMemcpyDeviceToHost));
}

bool DeviceModel::reserve(int B) {
  batch_ = B;
  if (B <= capacity_) return false;
  const Fusion fuse = fusable(host_);
  std::int64_t scratch = 0, col = 0, tmp = 0;
  const std::vector<Sizes> sizes = node_sizes(host_, B, fuse, col_budget_, &scratch, &col, &tmp);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    DNode& d = nodes_[i];
    // Free before allocating, so growing reuses the cache instead of holding both sizes.
    d.out = DeviceBuffer(), d.grad = DeviceBuffer(), d.mask = DeviceBuffer();
    d.out = floats(device_, sizes[i].out, stream_);
    d.grad = floats(device_, sizes[i].grad, stream_);
    d.mask = floats(device_, sizes[i].mask, stream_);
    if (sizes[i].stats > 0 && !d.mean.get()) d.mean = floats(device_, sizes[i].stats, stream_), d.invstd = floats(device_, sizes[i].stats, stream_);
  }
  const std::vector<int> owner = grad_owners(host_);
  for (size_t i = 0; i < nodes_.size(); ++i) nodes_[i].grad_ptr = nodes_[static_cast<size_t>(owner[i])].grad.as<float>();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    DNode& d = nodes_[i];
    d.out_ptr = d.out.as<float>();
    if (d.fuse_relu) {
      // The producer's result lives in its ReLU's buffer.
      for (size_t j = i + 1; j < nodes_.size(); ++j)
        if (!host_.nodes()[j].inputs.empty() && host_.nodes()[j].inputs[0] == static_cast<int>(i)) d.out_ptr = nodes_[j].out.as<float>();
    }
  }
  // A batch norm that adds the residual writes where its Add's result lives (the Add's ReLU's buffer, if fused).
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].residual >= 0) nodes_[i].out_ptr = nodes_[static_cast<size_t>(nodes_[i].sum)].out_ptr;
  scratch_ = DeviceBuffer(), col_ = DeviceBuffer(), tmp_ = DeviceBuffer();
  scratch_ = floats(device_, scratch, stream_);
  col_ = floats(device_, col, stream_);
  tmp_ = floats(device_, tmp, stream_);
  capacity_ = B;
  return true;
}

void DeviceModel::zero_grads() {
  TB_CUDA_CHECK(cudaMemsetAsync(grads_.get(), 0, static_cast<std::size_t>(param_count_) * sizeof(float), stream_));
}

const float* DeviceModel::output(const Head& h) const { return nodes_[static_cast<size_t>(h.node)].out_ptr; }

float* DeviceModel::output_grad(const Head& h) {
  DNode& d = nodes_[static_cast<size_t>(h.node)];
  d.grad_written = true;
  return d.grad_ptr;
}

void DeviceModel::conv_forward(const Node& n, const float* in, float* out, bool relu) {
  const ConvGeom& g = n.geom;
  const int B = batch_, chunk = conv_chunk(g, B, col_budget_), K = g.C * g.KH * g.KW;
  const int ohw = g.OH() * g.OW();
  const float* P = params_.as<float>();
  for (int n0 = 0; n0 < B; n0 += chunk) {
    const int nb = std::min(chunk, B - n0), cols = nb * ohw;
    im2col(col_.as<float>(), in, n0, nb, g.C, g.H, g.W, g.KH, g.KW, g.stride, g.pad, stream_);
    gemm_.run(false, false, g.O, cols, K, 1.f, P + n.weight, K, col_.as<float>(), cols, 0.f, tmp_.as<float>(), cols);
    conv_out_from_gemm(out, tmp_.as<float>(), n.bias >= 0 ? P + n.bias : nullptr, n0, nb, g.O, ohw, relu, stream_);
  }
}

void DeviceModel::set_col_budget(std::int64_t floats) {
  if (floats < 1) TB_THROW(ErrorCode::BadInput, "the im2col budget must be at least 1 float, got " + std::to_string(floats));
  col_budget_ = floats;
  capacity_ = 0;  // chunk sizes change: the next reserve() sizes the workspace again
}

void DeviceModel::forward(const float* x, int B, bool train, const TrainState* st, int micro_batch) {
  if (B > capacity_) TB_THROW(ErrorCode::Internal, "DeviceModel::forward: batch " + std::to_string(B) + " exceeds the reserved " + std::to_string(capacity_));
  batch_ = B;
  const float* P = params_.as<float>();
  float* R = buffers_.as<float>();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = host_.nodes()[i];
    DNode& d = nodes_[i];
    d.grad_written = false;
    const std::int64_t count = static_cast<std::int64_t>(B) * n.dims.size();
    const float* in = n.inputs.empty() ? nullptr : nodes_[static_cast<size_t>(n.inputs[0])].out_ptr;
    if (profile_ && n.kind != NodeKind::Input) profile_->begin();
    switch (n.kind) {
      case NodeKind::Input: d.out_ptr = const_cast<float*>(x); break;
      case NodeKind::Conv:
        conv_forward(n, in, d.out_ptr, d.fuse_relu);
        break;
      case NodeKind::BatchNorm: {
        const int C = n.dims.c, HW = n.dims.h * n.dims.w;
        // With a residual: the Add's sum, and the Add's ReLU where it has one.
        const float* residual = d.residual >= 0 ? nodes_[static_cast<size_t>(d.residual)].out_ptr : nullptr;
        const bool relu = d.residual >= 0 ? nodes_[static_cast<size_t>(d.sum)].fuse_relu : d.fuse_relu;
        if (train) {
          batchnorm_forward_train(d.out_ptr, d.mean.as<float>(), d.invstd.as<float>(), in, P + n.weight, P + n.bias, R + n.running_mean,
                                  R + n.running_var, B, C, HW, 0.1f, 1e-5f, stream_, relu, residual);
        } else {
          batchnorm_forward_eval(d.out_ptr, in, P + n.weight, P + n.bias, R + n.running_mean, R + n.running_var, B, C, HW, 1e-5f, relu,
                                 stream_, residual);
        }
        break;
      }
      case NodeKind::Relu:
        if (!d.fused_away) relu_forward(d.out_ptr, in, count, stream_);
        break;
      case NodeKind::Add:
        if (!d.summed_away) add_forward(d.out_ptr, in, nodes_[static_cast<size_t>(n.inputs[1])].out_ptr, count, stream_, d.fuse_relu);
        break;
      case NodeKind::GlobalAvgPool: {
        const Dims src = host_.nodes()[static_cast<size_t>(n.inputs[0])].dims;
        global_avgpool_forward(d.out_ptr, in, B, src.c, src.h * src.w, stream_);
        break;
      }
      case NodeKind::Flatten: d.out_ptr = const_cast<float*>(in); break;
      case NodeKind::Linear: {
        const int I = static_cast<int>(host_.nodes()[static_cast<size_t>(n.inputs[0])].dims.size()), O = n.dims.c;
        gemm_.run(false, true, B, O, I, 1.f, in, I, P + n.weight, I, 0.f, d.out_ptr, O);
        bias_act(d.out_ptr, n.bias >= 0 ? P + n.bias : nullptr, count, O, 1, d.fuse_relu, stream_);
        break;
      }
      case NodeKind::Dropout:
        if (train && n.p > 0) {
          d.out_ptr = d.out.as<float>();
          dropout_forward(d.out_ptr, d.mask.as<float>(), in, count, static_cast<float>(n.p), i + 1, micro_batch, st, stream_);
        } else {
          d.out_ptr = const_cast<float*>(in);
        }
        break;
    }
    if (profile_ && n.kind != NodeKind::Input)
      profile_->end(std::string(node_kind_name(n.kind)) + (d.residual >= 0 ? "+add" : "") + (d.fuse_relu ? "+relu" : "") + " forward");
  }
}

// Where the gradient for `input` goes: its buffer the first time (ops overwrite), scratch after (then added).
float* DeviceModel::grad_target(int input, bool* accumulate) {
  DNode& d = nodes_[static_cast<size_t>(input)];
  if (!d.grad_written) {
    d.grad_written = true;
    *accumulate = false;
    return d.grad_ptr;
  }
  *accumulate = true;
  return scratch_.as<float>();
}

void DeviceModel::conv_backward(const Node& n, const float* in, const float* dout, float* din) {
  const ConvGeom& g = n.geom;
  const int B = batch_, chunk = conv_chunk(g, B, col_budget_), K = g.C * g.KH * g.KW;
  const int ohw = g.OH() * g.OW();
  const float* P = params_.as<float>();
  float* G = grads_.as<float>();
  for (int n0 = 0; n0 < B; n0 += chunk) {
    const int nb = std::min(chunk, B - n0), cols = nb * ohw;
    conv_grad_to_gemm(tmp_.as<float>(), dout, n0, nb, g.O, ohw, stream_);
    im2col(col_.as<float>(), in, n0, nb, g.C, g.H, g.W, g.KH, g.KW, g.stride, g.pad, stream_);
    // dW (O, K) += dY (O, cols) . col^T
    gemm_.run(false, true, g.O, K, cols, 1.f, tmp_.as<float>(), cols, col_.as<float>(), cols, 1.f, G + n.weight, K);
    if (n.bias >= 0) bias_grad_rows(G + n.bias, tmp_.as<float>(), g.O, cols, stream_);
    if (din) {
      // dcol (K, cols) = W^T . dY, then scattered back to the input's layout.
      gemm_.run(true, false, K, cols, g.O, 1.f, P + n.weight, K, tmp_.as<float>(), cols, 0.f, col_.as<float>(), cols);
      col2im(din, col_.as<float>(), n0, nb, g.C, g.H, g.W, g.KH, g.KW, g.stride, g.pad, stream_);
    }
  }
}

void DeviceModel::backward() {
  const int B = batch_;
  const float* P = params_.as<float>();
  float* G = grads_.as<float>();
  for (int i = static_cast<int>(nodes_.size()) - 1; i > 0; --i) {
    const Node& n = host_.nodes()[static_cast<size_t>(i)];
    DNode& d = nodes_[static_cast<size_t>(i)];
    if (!d.grad_written) continue;
    const float* dout = d.grad_ptr;
    const std::int64_t count = static_cast<std::int64_t>(B) * n.dims.size();
    const Node& src = host_.nodes()[static_cast<size_t>(n.inputs[0])];
    const std::int64_t in_count = static_cast<std::int64_t>(B) * src.dims.size();
    const float* in = nodes_[static_cast<size_t>(n.inputs[0])].out_ptr;
    // Runs `write` with input `which`'s gradient buffer, adding when another consumer wrote it first. The
    // batch itself has no gradient: `write` then gets null and still computes its parameters' gradients.
    auto to_input = [&](int which, std::int64_t n_values, auto&& write) {
      const int input = n.inputs[static_cast<size_t>(which)];
      if (host_.nodes()[static_cast<size_t>(input)].kind == NodeKind::Input) return write(nullptr);
      bool acc = false;
      float* dst = grad_target(input, &acc);
      write(dst);
      if (acc) accumulate(nodes_[static_cast<size_t>(input)].grad_ptr, dst, n_values, stream_);
    };
    auto copy = [&](float* dst, const float* from, std::int64_t values) {
      TB_CUDA_CHECK(cudaMemcpyAsync(dst, from, static_cast<std::size_t>(values) * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
    };
    // A node that passes values on hands its gradient to an input that keeps it in the same buffer by
    // marking it written; an input with a second consumer gets a copy (or an addition) as before.
    auto pass_on = [&](int which, std::int64_t n_values) {
      DNode& src_node = nodes_[static_cast<size_t>(n.inputs[static_cast<size_t>(which)])];
      if (src_node.grad_ptr == d.grad_ptr && d.grad_ptr) {
        src_node.grad_written = true;
        return;
      }
      to_input(which, n_values, [&](float* din) {
        if (din) copy(din, dout, n_values);
      });
    };
    if (profile_) profile_->begin();
    switch (n.kind) {
      case NodeKind::Input: break;
      case NodeKind::Conv:
        to_input(0, in_count, [&](float* din) { conv_backward(n, in, dout, din); });
        break;
      case NodeKind::BatchNorm:
        to_input(0, in_count, [&](float* din) {
          batchnorm_backward(din, G + n.weight, G + n.bias, dout, in, P + n.weight, d.mean.as<float>(), d.invstd.as<float>(), B, n.dims.c,
                             n.dims.h * n.dims.w, stream_);
        });
        break;
      case NodeKind::Relu:
        to_input(0, in_count, [&](float* din) {
          if (din) relu_backward(din, dout, d.out_ptr, count, stream_);
        });
        break;
      case NodeKind::Add:
        for (int which : {0, 1}) pass_on(which, count);
        break;
      case NodeKind::GlobalAvgPool:
        to_input(0, in_count, [&](float* din) {
          if (din) global_avgpool_backward(din, dout, B, src.dims.c, src.dims.h * src.dims.w, stream_);
        });
        break;
      case NodeKind::Flatten: pass_on(0, count); break;
      case NodeKind::Linear: {
        const int I = static_cast<int>(src.dims.size()), O = n.dims.c;
        gemm_.run(true, false, O, I, B, 1.f, dout, O, in, I, 1.f, G + n.weight, I);  // dW (O, I) += dout^T . in
        if (n.bias >= 0) bias_grad(G + n.bias, dout, B, O, stream_);
        to_input(0, in_count, [&](float* din) {
          if (din) gemm_.run(false, false, B, I, O, 1.f, dout, O, P + n.weight, I, 0.f, din, I);
        });
        break;
      }
      case NodeKind::Dropout:
        if (n.p == 0) {
          pass_on(0, count);
          break;
        }
        to_input(0, in_count, [&](float* din) {
          if (din) multiply(din, dout, d.mask.as<float>(), count, stream_);
        });
        break;
    }
    if (profile_) profile_->end(std::string(node_kind_name(n.kind)) + " backward");
  }
}

MemoryBreakdown DeviceModel::measured() const {
  MemoryBreakdown m;
  m.weights = static_cast<std::int64_t>(params_.bytes() + buffers_.bytes());
  m.gradients = static_cast<std::int64_t>(grads_.bytes());
  for (const DNode& d : nodes_) {
    m.activations += static_cast<std::int64_t>(d.out.bytes() + d.mask.bytes() + d.mean.bytes() + d.invstd.bytes());
    m.activation_grads += static_cast<std::int64_t>(d.grad.bytes());
  }
  m.workspace = static_cast<std::int64_t>(scratch_.bytes() + col_.bytes() + tmp_.bytes()) + gemm_.workspace_bytes();
  return m;
}

MemoryBreakdown DeviceModel::predict(const Model& host, int B) {
  // Bytes requested, as measured() counts them (the allocator's rounding shows in its own statistics).
  auto rounded = [](std::int64_t floats_n) { return floats_n * static_cast<std::int64_t>(sizeof(float)); };
  MemoryBreakdown m;
  m.weights = rounded(host.param_count()) + rounded(buffer_floats(host));
  m.gradients = rounded(host.param_count());
  std::int64_t scratch = 0, col = 0, tmp = 0;
  const std::vector<Sizes> sizes = node_sizes(host, B, fusable(host), kColBudget, &scratch, &col, &tmp);
  for (const Sizes& s : sizes) {
    m.activations += rounded(s.out) + rounded(s.mask) + 2 * rounded(s.stats);
    m.activation_grads += rounded(s.grad);
  }
  m.workspace = rounded(scratch) + rounded(col) + rounded(tmp);
  return m;
}

std::int64_t DeviceModel::predict_split_bytes(const Model& host, int B, int sms) {
  std::int64_t most = 0;
  auto gemm = [&](int M, int N, int K) { most = std::max(most, GemmEngine::split_bytes(M, N, K, sms)); };
  for (const Node& n : host.nodes()) {
    if (n.kind == NodeKind::Conv) {
      const int chunk = conv_chunk(n.geom, B, kColBudget);
      const int cols = chunk * n.geom.OH() * n.geom.OW(), taps = n.geom.C * n.geom.KH * n.geom.KW;
      gemm(n.geom.O, cols, taps);  // forward
      gemm(n.geom.O, taps, cols);  // weight gradient
      gemm(taps, cols, n.geom.O);  // input gradient
    } else if (n.kind == NodeKind::Linear) {
      const int I = static_cast<int>(host.nodes()[static_cast<size_t>(n.inputs[0])].dims.size()), O = n.dims.c;
      gemm(B, O, I);
      gemm(O, I, B);
      gemm(B, I, O);
    }
  }
  return most;
}

}  // namespace tb::cuda
