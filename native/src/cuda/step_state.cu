// The update and its bookkeeping on the device: SGD and AdamW over the flat parameter
// block, and the gradient norm, clipping, fp16 scale and step state that decide the
// update without a round trip to the host.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/errors.h"
#include "cuda/cuda_check.h"
#include "cuda/kernel_utils.cuh"
#include "cuda/kernels.h"

namespace tb::cuda {
namespace {

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

__global__ void sgd_k(float* p, const float* g, float* buf, std::int64_t n, float mu, float wd, const TrainState* st) {
  if (!st->apply) return;
  const float lr = st->lr, f = st->grad_factor;
  TB_GRID_LOOP(i, n) {
    const float b = mu * buf[i] + (g[i] * f + wd * p[i]);  // PyTorch's SGD: the first step sets buf = g
    buf[i] = b;
    p[i] -= lr * b;
  }
}

__global__ void adamw_k(float* p, const float* g, float* m, float* v, std::int64_t n, float b1, float b2, float eps, float wd,
                        const TrainState* st) {
  if (!st->apply) return;
  const float lr = st->lr, f = st->grad_factor, bc1 = st->bias_correction1, bc2 = st->bias_correction2;
  TB_GRID_LOOP(i, n) {
    const float gi = g[i] * f;
    const float mi = b1 * m[i] + (1.f - b1) * gi;
    const float vi = b2 * v[i] + (1.f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * (1.f - lr * wd) - (lr / bc1) * mi / (sqrtf(vi) / sqrtf(bc2) + eps);
  }
}

}  // namespace

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

void sgd_update(float* p, const float* g, float* buf, std::int64_t n, float momentum, float weight_decay, const TrainState* st,
                cudaStream_t s) {
  TB_LAUNCH(sgd_k, blocks_for(n), kThreads, 0, s)(p, g, buf, n, momentum, weight_decay, st);
  TB_CUDA_LAUNCH_CHECK();
}

void adamw_update(float* p, const float* g, float* m, float* v, std::int64_t n, float beta1, float beta2, float eps,
                  float weight_decay, const TrainState* st, cudaStream_t s) {
  TB_LAUNCH(adamw_k, blocks_for(n), kThreads, 0, s)(p, g, m, v, n, beta1, beta2, eps, weight_decay, st);
  TB_CUDA_LAUNCH_CHECK();
}

}  // namespace tb::cuda
