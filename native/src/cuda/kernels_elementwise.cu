#include "cuda/cuda_check.h"
#include "cuda/kernel_utils.cuh"
#include "cuda/kernels.h"

namespace tb::cuda {
namespace {

__global__ void relu_fwd_k(float* out, const float* in, std::int64_t n) {
  TB_GRID_LOOP(i, n) out[i] = in[i] > 0.f ? in[i] : 0.f;
}
__global__ void relu_bwd_k(float* din, const float* dout, const float* out, std::int64_t n) {
  TB_GRID_LOOP(i, n) din[i] = out[i] > 0.f ? dout[i] : 0.f;
}
__global__ void add_k(float* out, const float* a, const float* b, std::int64_t n) {
  TB_GRID_LOOP(i, n) out[i] = a[i] + b[i];
}
__global__ void widen_u8_k(float* out, const std::uint8_t* in, std::int64_t n, float scale, float offset) {
  TB_GRID_LOOP(i, n) out[i] = in[i] * scale + offset;
}
__global__ void to_bf16_k(__nv_bfloat16* out, const float* in, std::int64_t n) {
  TB_GRID_LOOP(i, n) out[i] = __float2bfloat16(in[i]);
}
// The optimizer reads its step scalars from the device state: a skipped fp16 step leaves every
// parameter and moment untouched, and the gradient is unscaled and clipped on the fly.
__global__ void to_f16_k(__half* out, const float* in, std::int64_t n) {
  TB_GRID_LOOP(i, n) out[i] = __float2half_rn(in[i]);
}
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
__global__ void nonfinite_k(unsigned int* count, const float* x, std::int64_t n) {
  unsigned int local = 0;
  TB_GRID_LOOP(i, n) local += isfinite(x[i]) ? 0u : 1u;
  if (local) atomicAdd(count, local);
}

}  // namespace

void relu_forward(float* out, const float* in, std::int64_t n, cudaStream_t s) {
  TB_LAUNCH(relu_fwd_k, blocks_for(n), kThreads, 0, s)(out, in, n);
  TB_CUDA_LAUNCH_CHECK();
}
void relu_backward(float* din, const float* dout, const float* out, std::int64_t n, cudaStream_t s) {
  TB_LAUNCH(relu_bwd_k, blocks_for(n), kThreads, 0, s)(din, dout, out, n);
  TB_CUDA_LAUNCH_CHECK();
}
void add_forward(float* out, const float* a, const float* b, std::int64_t n, cudaStream_t s) {
  TB_LAUNCH(add_k, blocks_for(n), kThreads, 0, s)(out, a, b, n);
  TB_CUDA_LAUNCH_CHECK();
}
void widen_u8(float* out, const std::uint8_t* in, std::int64_t n, float scale, float offset, cudaStream_t s) {
  TB_LAUNCH(widen_u8_k, blocks_for(n), kThreads, 0, s)(out, in, n, scale, offset);
  TB_CUDA_LAUNCH_CHECK();
}
void to_bf16(__nv_bfloat16* out, const float* in, std::int64_t n, cudaStream_t s) {
  TB_LAUNCH(to_bf16_k, blocks_for(n), kThreads, 0, s)(out, in, n);
  TB_CUDA_LAUNCH_CHECK();
}
void to_f16(__half* out, const float* in, std::int64_t n, cudaStream_t s) {
  TB_LAUNCH(to_f16_k, blocks_for(n), kThreads, 0, s)(out, in, n);
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
void count_nonfinite(unsigned int* count, const float* x, std::int64_t n, cudaStream_t s) {
  TB_LAUNCH(nonfinite_k, blocks_for(n), kThreads, 0, s)(count, x, n);
  TB_CUDA_LAUNCH_CHECK();
}

}  // namespace tb::cuda
