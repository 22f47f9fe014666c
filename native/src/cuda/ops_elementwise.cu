// Elementwise ops on the device, as cpu/ops_elementwise.cpp: ReLU, add, products and
// sums of gradients, dropout with per-element hashed masks, global average pooling, the
// 16-bit copies for cuBLASLt and the non-finite count.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/errors.h"
#include "cuda/cuda_check.h"
#include "cuda/kernel_utils.cuh"
#include "cuda/kernels.h"

namespace tb::cuda {
namespace {

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

__global__ void gap_fwd_k(float* out, const float* in, std::int64_t rows, int HW) {
  TB_GRID_LOOP(r, rows) {
    double s = 0;
    for (int i = 0; i < HW; ++i) s += in[r * HW + i];
    out[r] = static_cast<float>(s / HW);
  }
}

__global__ void gap_bwd_k(float* din, const float* dout, std::int64_t n, int HW) {
  TB_GRID_LOOP(i, n) din[i] = dout[i / HW] / HW;
}

__global__ void relu_fwd_k(float* out, const float* in, std::int64_t n) {
  TB_GRID_LOOP(i, n) out[i] = in[i] > 0.f ? in[i] : 0.f;
}

__global__ void relu_bwd_k(float* din, const float* dout, const float* out, std::int64_t n) {
  TB_GRID_LOOP(i, n) din[i] = out[i] > 0.f ? dout[i] : 0.f;
}

// A residual add and the ReLU after it in one pass (ADR 0020 step 4): the sum is never written unclipped.
__global__ void add_k(float* out, const float* a, const float* b, std::int64_t n, bool relu) {
  TB_GRID_LOOP(i, n) {
    const float v = a[i] + b[i];
    out[i] = relu && v < 0.f ? 0.f : v;
  }
}

__global__ void to_bf16_k(__nv_bfloat16* out, const float* in, std::int64_t n) {
  TB_GRID_LOOP(i, n) out[i] = __float2bfloat16(in[i]);
}

// The optimizer reads its step scalars from the device state: a skipped fp16 step leaves every
// parameter and moment untouched, and the gradient is unscaled and clipped on the fly.
__global__ void to_f16_k(__half* out, const float* in, std::int64_t n) {
  TB_GRID_LOOP(i, n) out[i] = __float2half_rn(in[i]);
}

__global__ void nonfinite_k(unsigned int* count, const float* x, std::int64_t n) {
  unsigned int local = 0;
  TB_GRID_LOOP(i, n) local += isfinite(x[i]) ? 0u : 1u;
  if (local) atomicAdd(count, local);
}

}  // namespace

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

void global_avgpool_forward(float* out, const float* in, int N, int C, int HW, cudaStream_t s) {
  const std::int64_t rows = static_cast<std::int64_t>(N) * C;
  TB_LAUNCH(gap_fwd_k, blocks_for(rows), kThreads, 0, s)(out, in, rows, HW);
  TB_CUDA_LAUNCH_CHECK();
}

void global_avgpool_backward(float* din, const float* dout, int N, int C, int HW, cudaStream_t s) {
  const std::int64_t n = static_cast<std::int64_t>(N) * C * HW;
  TB_LAUNCH(gap_bwd_k, blocks_for(n), kThreads, 0, s)(din, dout, n, HW);
  TB_CUDA_LAUNCH_CHECK();
}

void relu_forward(float* out, const float* in, std::int64_t n, cudaStream_t s) {
  TB_LAUNCH(relu_fwd_k, blocks_for(n), kThreads, 0, s)(out, in, n);
  TB_CUDA_LAUNCH_CHECK();
}

void relu_backward(float* din, const float* dout, const float* out, std::int64_t n, cudaStream_t s) {
  TB_LAUNCH(relu_bwd_k, blocks_for(n), kThreads, 0, s)(din, dout, out, n);
  TB_CUDA_LAUNCH_CHECK();
}

void add_forward(float* out, const float* a, const float* b, std::int64_t n, cudaStream_t s, bool relu) {
  TB_LAUNCH(add_k, blocks_for(n), kThreads, 0, s)(out, a, b, n, relu);
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

void count_nonfinite(unsigned int* count, const float* x, std::int64_t n, cudaStream_t s) {
  TB_LAUNCH(nonfinite_k, blocks_for(n), kThreads, 0, s)(count, x, n);
  TB_CUDA_LAUNCH_CHECK();
}

}  // namespace tb::cuda
