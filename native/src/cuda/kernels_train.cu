// The rest of a training step on the device: widening the batch, fused
// epilogues, dropout, losses into the device-side sums, and the gradient
// bookkeeping (norm, clipping, fp16 loss scaling) that decides the update
// without a round trip to the host.
#include <cuda_fp16.h>

#include "core/errors.h"
#include "cuda/cuda_check.h"
#include "cuda/kernel_utils.cuh"
#include "cuda/kernels.h"

namespace tb::cuda {
namespace {

template <typename T>
__device__ inline float as_float(T v) {
  return static_cast<float>(v);
}
template <>
__device__ inline float as_float<__half>(__half v) {
  return __half2float(v);
}

template <typename T>
__global__ void widen_k(float* out, const T* in, std::int64_t n, float scale, float offset) {
  TB_GRID_LOOP(i, n) out[i] = as_float(in[i]) * scale + offset;
}
template <typename T>
__global__ void labels_k(std::int32_t* out, const T* in, std::int64_t n) {
  TB_GRID_LOOP(i, n) out[i] = static_cast<std::int32_t>(in[i]);
}

__global__ void bias_act_k(float* x, const float* bias, std::int64_t n, int channels, int inner, bool relu) {
  TB_GRID_LOOP(i, n) {
    float v = x[i] + (bias ? bias[i / inner % channels] : 0.f);
    x[i] = relu && v < 0.f ? 0.f : v;
  }
}

// tmp is (O, nb*HW); out is (N, O, HW).
__global__ void conv_out_k(float* out, const float* tmp, const float* bias, int n0, int nb, int O, int HW, bool relu) {
  const std::int64_t total = static_cast<std::int64_t>(nb) * O * HW;
  TB_GRID_LOOP(i, total) {
    const int p = static_cast<int>(i % HW), o = static_cast<int>(i / HW % O), n = static_cast<int>(i / (static_cast<std::int64_t>(HW) * O));
    float v = tmp[(static_cast<std::int64_t>(o) * nb + n) * HW + p] + (bias ? bias[o] : 0.f);
    out[static_cast<std::int64_t>(n0) * O * HW + i] = relu && v < 0.f ? 0.f : v;
  }
}
__global__ void conv_grad_k(float* tmp, const float* dout, int n0, int nb, int O, int HW) {
  const std::int64_t total = static_cast<std::int64_t>(nb) * O * HW;
  TB_GRID_LOOP(i, total) {
    const int p = static_cast<int>(i % HW), o = static_cast<int>(i / HW % O), n = static_cast<int>(i / (static_cast<std::int64_t>(HW) * O));
    tmp[(static_cast<std::int64_t>(o) * nb + n) * HW + p] = dout[static_cast<std::int64_t>(n0) * O * HW + i];
  }
}

__global__ void row_sums_k(float* db, const float* x, int cols) {
  const int r = blockIdx.x;
  double s = 0;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += x[static_cast<std::int64_t>(r) * cols + c];
  s = block_sum(s);
  if (threadIdx.x == 0) db[r] += static_cast<float>(s);
}

__global__ void bn_eval_k(float* out, const float* in, const float* gamma, const float* beta, const float* rm, const float* rv,
                          std::int64_t n, int C, int HW, float eps, bool relu) {
  TB_GRID_LOOP(i, n) {
    const int c = static_cast<int>(i / HW % C);
    const float g = gamma[c] * rsqrtf(rv[c] + eps);
    const float v = (in[i] - rm[c]) * g + beta[c];
    out[i] = relu && v < 0.f ? 0.f : v;
  }
}

// splitmix64 of (seed, index): a uniform in [0, 1) per element, independent of the launch shape.
__device__ inline float hash_uniform(unsigned long long seed, std::int64_t i) {
  unsigned long long z = seed + 0x9E3779B97F4A7C15ull * static_cast<unsigned long long>(i + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}
__global__ void dropout_k(float* out, float* mask, const float* in, std::int64_t n, float p, unsigned long long salt, int micro_batch,
                          const TrainState* st) {
  // Fresh masks per step (seed), per layer (salt) and per micro-batch of an accumulated step; nothing
  // else, so the masks never depend on when the host last read the sums.
  const unsigned long long seed = dropout_mask_seed(st->dropout_seed, salt, micro_batch);
  const float keep = 1.f / (1.f - p);
  TB_GRID_LOOP(i, n) {
    const float m = hash_uniform(seed, i) >= p ? keep : 0.f;
    mask[i] = m;
    out[i] = in[i] * m;
  }
}

__global__ void multiply_k(float* out, const float* a, const float* b, std::int64_t n) {
  TB_GRID_LOOP(i, n) out[i] = a[i] * b[i];
}
__global__ void accumulate_k(float* a, const float* b, std::int64_t n) {
  TB_GRID_LOOP(i, n) a[i] += b[i];
}
__global__ void loss_scale_k(float* x, std::int64_t n, const TrainState* st) {
  const float s = st->scale.scale;
  TB_GRID_LOOP(i, n) x[i] *= s;
}

__global__ void mse_k(float* row_loss, float* d, const float* pred, const float* target, int B, int D, float grad_scale) {
  TB_GRID_LOOP(b, B) {
    double sum = 0;
    for (int j = 0; j < D; ++j) {
      const std::int64_t i = static_cast<std::int64_t>(b) * D + j;
      const double e = static_cast<double>(pred[i]) - target[i];
      sum += e * e;
      if (d) d[i] = static_cast<float>(2.0 * e * grad_scale / (static_cast<double>(B) * D));
    }
    row_loss[b] = static_cast<float>(sum / D);
  }
}

// The sum of the row weights, as the CPU divides by (a 0.5 row counts half).
__global__ void mask_count_k(float* counted, const float* mask, int B) {
  double s = 0;
  for (int b = threadIdx.x; b < B; b += blockDim.x) s += mask[b];
  s = block_sum(s);
  if (threadIdx.x == 0) *counted = static_cast<float>(s);
}

__global__ void accumulate_loss_k(TrainState* st, int head, const float* row_loss, int B, const float* counted, float weight,
                                  bool count_micro_batch) {
  double s = 0;
  for (int b = threadIdx.x; b < B; b += blockDim.x) s += row_loss[b];
  s = block_sum(s);
  if (threadIdx.x == 0) {
    const double rows = counted ? *counted : B;
    const double mean = rows > 0 ? s / rows : 0.0;
    st->head_sums[head] += mean * B;
    st->loss_sum += weight * mean;
    if (count_micro_batch) st->micro_batches += 1;
  }
}

// One warp per row: argmax of the logits (first index on ties, as std::max_element) against the label.
__global__ void correct_k(TrainState* st, const float* logits, const std::int32_t* labels, const float* targets, const float* mask,
                          int B, int K) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= B) return;
  if (mask && mask[warp] == 0.f) return;
  auto argmax = [&](const float* row) {
    float best = -INFINITY;
    int at = K;
    for (int k = lane; k < K; k += 32)
      if (row[k] > best || at == K) best = row[k], at = k;
    for (int o = 16; o > 0; o >>= 1) {
      const float b2 = __shfl_down_sync(0xffffffff, best, o);
      const int a2 = __shfl_down_sync(0xffffffff, at, o);
      if (b2 > best || (b2 == best && a2 < at)) best = b2, at = a2;
    }
    return __shfl_sync(0xffffffff, at, 0);
  };
  const int predicted = argmax(logits + static_cast<std::int64_t>(warp) * K);
  const int want = labels ? labels[warp] : argmax(targets + static_cast<std::int64_t>(warp) * K);
  if (lane == 0 && predicted == want) atomicAdd(&st->correct, 1ull);
}

__global__ void gradient_stats_k(TrainState* st, const float* g, std::int64_t n) {
  double sq = 0;
  unsigned int bad = 0;
  TB_GRID_LOOP(i, n) {
    const float v = g[i];
    if (!isfinite(v)) ++bad;
    else sq += static_cast<double>(v) * v;
  }
  sq = block_sum(sq);
  const double bad_total = block_sum(static_cast<double>(bad));
  if (threadIdx.x == 0) {
    atomicAdd(&st->grad_sq, sq);
    if (bad_total > 0) atomicAdd(&st->nonfinite, static_cast<unsigned int>(bad_total));
  }
}

__global__ void finish_gradients_k(TrainState* st, float clip_norm, bool dynamic_scale, float beta1, float beta2) {
  const bool bad = st->nonfinite > 0;
  const float scale = st->scale.scale;
  const double norm = sqrt(st->grad_sq) / scale;
  if (!bad) st->grad_norm = norm;  // a skipped step keeps the last finite norm for the report
  // A step with inf/nan gradients never reaches the weights: fp16 expects a few (and adjusts the
  // scale); in fp32/bf16 the host reports them, and the NaN loss that usually comes with them.
  st->apply = bad ? 0 : 1;
  if (dynamic_scale) {
    LossScalePolicy policy;
    update_loss_scale(st->scale, bad, policy);
  }
  if (!st->apply) st->skipped += 1;
  // The factor that unscales and clips in one multiply inside the optimizer kernel.
  const double clip = clip_norm > 0 && norm > clip_norm ? clip_norm / (norm + 1e-6) : 1.0;
  st->grad_factor = static_cast<float>(clip / scale);
  if (st->apply) {
    st->adam_t += 1;
    st->bias_correction1 = 1.f - powf(beta1, static_cast<float>(st->adam_t));
    st->bias_correction2 = 1.f - powf(beta2, static_cast<float>(st->adam_t));
  }
  st->grad_sq = 0;
  st->nonfinite = 0;
}

__global__ void set_step_k(TrainState* st, float lr, unsigned long long seed) {
  st->lr = lr;
  st->dropout_seed = seed;
}

__global__ void reset_readout_k(TrainState* st) { reset_readout_sums(*st); }

__global__ void poison_k(float* g) { g[0] = INFINITY; }

template <typename T>
void launch_widen(float* out, const void* in, std::int64_t n, float scale, float offset, cudaStream_t s) {
  TB_LAUNCH(widen_k<T>, blocks_for(n), kThreads, 0, s)(out, static_cast<const T*>(in), n, scale, offset);
}
template <typename T>
void launch_labels(std::int32_t* out, const void* in, std::int64_t n, cudaStream_t s) {
  TB_LAUNCH(labels_k<T>, blocks_for(n), kThreads, 0, s)(out, static_cast<const T*>(in), n);
}

}  // namespace

void widen(float* out, const void* in, DType t, std::int64_t n, float scale, float offset, cudaStream_t s) {
  if (n <= 0) return;
  switch (t) {
    case DType::Bool:
    case DType::U8: launch_widen<std::uint8_t>(out, in, n, scale, offset, s); break;
    case DType::I8: launch_widen<std::int8_t>(out, in, n, scale, offset, s); break;
    case DType::U16: launch_widen<std::uint16_t>(out, in, n, scale, offset, s); break;
    case DType::I16: launch_widen<std::int16_t>(out, in, n, scale, offset, s); break;
    case DType::U32: launch_widen<std::uint32_t>(out, in, n, scale, offset, s); break;
    case DType::I32: launch_widen<std::int32_t>(out, in, n, scale, offset, s); break;
    case DType::U64: launch_widen<std::uint64_t>(out, in, n, scale, offset, s); break;
    case DType::I64: launch_widen<std::int64_t>(out, in, n, scale, offset, s); break;
    case DType::F16: launch_widen<__half>(out, in, n, scale, offset, s); break;
    case DType::F32: launch_widen<float>(out, in, n, scale, offset, s); break;
    case DType::F64: launch_widen<double>(out, in, n, scale, offset, s); break;
  }
  TB_CUDA_LAUNCH_CHECK();
}

void widen_labels(std::int32_t* out, const void* in, DType t, std::int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  switch (t) {
    case DType::Bool:
    case DType::U8: launch_labels<std::uint8_t>(out, in, n, s); break;
    case DType::I8: launch_labels<std::int8_t>(out, in, n, s); break;
    case DType::U16: launch_labels<std::uint16_t>(out, in, n, s); break;
    case DType::I16: launch_labels<std::int16_t>(out, in, n, s); break;
    case DType::U32: launch_labels<std::uint32_t>(out, in, n, s); break;
    case DType::I32: launch_labels<std::int32_t>(out, in, n, s); break;
    case DType::U64: launch_labels<std::uint64_t>(out, in, n, s); break;
    case DType::I64: launch_labels<std::int64_t>(out, in, n, s); break;
    default: TB_THROW(ErrorCode::BadInput, std::string("labels must be integers, got ") + dtype_name(t));
  }
  TB_CUDA_LAUNCH_CHECK();
}

void bias_act(float* x, const float* bias, std::int64_t n, int channels, int inner, bool relu, cudaStream_t s) {
  if (n <= 0 || (!bias && !relu)) return;
  TB_LAUNCH(bias_act_k, blocks_for(n), kThreads, 0, s)(x, bias, n, channels, inner, relu);
  TB_CUDA_LAUNCH_CHECK();
}

void conv_out_from_gemm(float* out, const float* tmp, const float* bias, int n0, int nb, int O, int HW, bool relu, cudaStream_t s) {
  TB_LAUNCH(conv_out_k, blocks_for(static_cast<std::int64_t>(nb) * O * HW), kThreads, 0, s)(out, tmp, bias, n0, nb, O, HW, relu);
  TB_CUDA_LAUNCH_CHECK();
}

void conv_grad_to_gemm(float* tmp, const float* dout, int n0, int nb, int O, int HW, cudaStream_t s) {
  TB_LAUNCH(conv_grad_k, blocks_for(static_cast<std::int64_t>(nb) * O * HW), kThreads, 0, s)(tmp, dout, n0, nb, O, HW);
  TB_CUDA_LAUNCH_CHECK();
}

void bias_grad_rows(float* db, const float* x, int rows, int cols, cudaStream_t s) {
  if (rows <= 0) return;
  TB_LAUNCH(row_sums_k, rows, kThreads, 0, s)(db, x, cols);
  TB_CUDA_LAUNCH_CHECK();
}

void batchnorm_forward_eval(float* out, const float* in, const float* gamma, const float* beta, const float* running_mean,
                            const float* running_var, int N, int C, int HW, float eps, bool relu, cudaStream_t s) {
  const std::int64_t n = static_cast<std::int64_t>(N) * C * HW;
  TB_LAUNCH(bn_eval_k, blocks_for(n), kThreads, 0, s)(out, in, gamma, beta, running_mean, running_var, n, C, HW, eps, relu);
  TB_CUDA_LAUNCH_CHECK();
}

void dropout_forward(float* out, float* mask, const float* in, std::int64_t n, float p, unsigned long long salt, int micro_batch,
                     const TrainState* st, cudaStream_t s) {
  TB_LAUNCH(dropout_k, blocks_for(n), kThreads, 0, s)(out, mask, in, n, p, salt, micro_batch, st);
  TB_CUDA_LAUNCH_CHECK();
}

void multiply(float* out, const float* a, const float* b, std::int64_t n, cudaStream_t s) {
  TB_LAUNCH(multiply_k, blocks_for(n), kThreads, 0, s)(out, a, b, n);
  TB_CUDA_LAUNCH_CHECK();
}

void accumulate(float* a, const float* b, std::int64_t n, cudaStream_t s) {
  TB_LAUNCH(accumulate_k, blocks_for(n), kThreads, 0, s)(a, b, n);
  TB_CUDA_LAUNCH_CHECK();
}

void apply_loss_scale(float* x, std::int64_t n, const TrainState* st, cudaStream_t s) {
  TB_LAUNCH(loss_scale_k, blocks_for(n), kThreads, 0, s)(x, n, st);
  TB_CUDA_LAUNCH_CHECK();
}

void mse(float* row_loss, float* dpred, const float* pred, const float* target, int B, int D, float grad_scale, cudaStream_t s) {
  TB_LAUNCH(mse_k, blocks_for(B), kThreads, 0, s)(row_loss, dpred, pred, target, B, D, grad_scale);
  TB_CUDA_LAUNCH_CHECK();
}

void mask_count(float* counted, const float* mask, int B, cudaStream_t s) {
  TB_LAUNCH(mask_count_k, 1, kThreads, 0, s)(counted, mask, B);
  TB_CUDA_LAUNCH_CHECK();
}

void accumulate_loss(TrainState* st, int head, const float* row_loss, int B, const float* rows_counted, float weight,
                     bool count_micro_batch, cudaStream_t s) {
  TB_LAUNCH(accumulate_loss_k, 1, kThreads, 0, s)(st, head, row_loss, B, rows_counted, weight, count_micro_batch);
  TB_CUDA_LAUNCH_CHECK();
}

void count_correct(TrainState* st, const float* logits, const std::int32_t* labels, const float* targets, const float* mask, int B,
                   int K, cudaStream_t s) {
  const std::int64_t threads = static_cast<std::int64_t>(B) * 32;
  TB_LAUNCH(correct_k, static_cast<unsigned>((threads + kThreads - 1) / kThreads), kThreads, 0, s)(st, logits, labels, targets, mask, B, K);
  TB_CUDA_LAUNCH_CHECK();
}

void gradient_stats(TrainState* st, const float* g, std::int64_t n, cudaStream_t s) {
  const unsigned blocks = blocks_for(n) < 1024 ? blocks_for(n) : 1024;
  TB_LAUNCH(gradient_stats_k, blocks, kThreads, 0, s)(st, g, n);
  TB_CUDA_LAUNCH_CHECK();
}

void finish_gradients(TrainState* st, float clip_norm, bool dynamic_scale, float beta1, float beta2, cudaStream_t s) {
  TB_LAUNCH(finish_gradients_k, 1, 1, 0, s)(st, clip_norm, dynamic_scale, beta1, beta2);
  TB_CUDA_LAUNCH_CHECK();
}

void set_step(TrainState* st, float lr, unsigned long long dropout_seed, cudaStream_t s) {
  TB_LAUNCH(set_step_k, 1, 1, 0, s)(st, lr, dropout_seed);
  TB_CUDA_LAUNCH_CHECK();
}

void reset_readout(TrainState* st, cudaStream_t s) {
  TB_LAUNCH(reset_readout_k, 1, 1, 0, s)(st);
  TB_CUDA_LAUNCH_CHECK();
}

void poison_gradient(float* g, cudaStream_t s) {
  TB_LAUNCH(poison_k, 1, 1, 0, s)(g);
  TB_CUDA_LAUNCH_CHECK();
}

}  // namespace tb::cuda
