// Batch norm on the device, as cpu/ops_batchnorm.cpp: training statistics and the
// running averages, evaluation with the running statistics, and the backward.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/errors.h"
#include "cuda/cuda_check.h"
#include "cuda/kernel_utils.cuh"
#include "cuda/kernels.h"

namespace tb::cuda {
namespace {

__global__ void bn_eval_k(float* out, const float* in, const float* gamma, const float* beta, const float* rm, const float* rv,
                          std::int64_t n, int C, int HW, float eps, bool relu, const float* residual) {
  TB_GRID_LOOP(i, n) {
    const int c = static_cast<int>(i / HW % C);
    const float g = gamma[c] * rsqrtf(rv[c] + eps);
    float v = (in[i] - rm[c]) * g + beta[c];
    if (residual) v += residual[i];
    out[i] = relu && v < 0.f ? 0.f : v;
  }
}

// One block per channel, the CPU formula: din = gamma*invstd/M * (M*dy - sum(dy) - xhat*sum(dy*xhat)).
__global__ void bn_backward_k(float* din, float* dgamma, float* dbeta, const float* dout, const float* in, const float* gamma,
                              const float* save_mean, const float* save_invstd, int N, int C, int HW) {
  const int c = blockIdx.x;
  const std::int64_t M = static_cast<std::int64_t>(N) * HW;
  const double mean = save_mean[c], invstd = save_invstd[c];
  double sdy = 0, sdyx = 0;
  for (std::int64_t i = threadIdx.x; i < M; i += blockDim.x) {
    const std::int64_t at = (i / HW * C + c) * HW + i % HW;
    sdy += dout[at];
    sdyx += dout[at] * (in[at] - mean) * invstd;
  }
  __shared__ double sum_dy, sum_dy_xhat;
  const double a = block_sum(sdy);
  if (threadIdx.x == 0) sum_dy = a;
  const double b = block_sum(sdyx);
  if (threadIdx.x == 0) {
    sum_dy_xhat = b;
    dbeta[c] += static_cast<float>(sum_dy);
    dgamma[c] += static_cast<float>(b);
  }
  __syncthreads();
  if (!din) return;
  const double k = gamma[c] * invstd / static_cast<double>(M);
  for (std::int64_t i = threadIdx.x; i < M; i += blockDim.x) {
    const std::int64_t at = (i / HW * C + c) * HW + i % HW;
    const double xhat = (in[at] - mean) * invstd;
    din[at] = static_cast<float>(k * (M * static_cast<double>(dout[at]) - sum_dy - xhat * sum_dy_xhat));
  }
}

// One block per channel: mean, biased variance for normalising, unbiased for the running estimate.
__global__ void bn_train_k(float* out, float* save_mean, float* save_invstd, const float* in, const float* gamma, const float* beta,
                           float* rm, float* rv, int N, int C, int HW, float momentum, float eps, bool relu, const float* residual) {
  const int c = blockIdx.x;
  const std::int64_t M = static_cast<std::int64_t>(N) * HW;
  double s = 0;
  for (std::int64_t i = threadIdx.x; i < M; i += blockDim.x) s += in[(i / HW * C + c) * HW + i % HW];
  __shared__ double mean, var;
  s = block_sum(s);
  if (threadIdx.x == 0) mean = s / M;
  __syncthreads();
  double q = 0;
  for (std::int64_t i = threadIdx.x; i < M; i += blockDim.x) {
    const double d = in[(i / HW * C + c) * HW + i % HW] - mean;
    q += d * d;
  }
  q = block_sum(q);
  if (threadIdx.x == 0) {
    var = q / M;
    save_mean[c] = static_cast<float>(mean);
    save_invstd[c] = static_cast<float>(1.0 / sqrt(var + eps));
    if (rm) {
      const double unbiased = M > 1 ? q / (M - 1) : var;
      rm[c] = static_cast<float>((1 - momentum) * rm[c] + momentum * mean);
      rv[c] = static_cast<float>((1 - momentum) * rv[c] + momentum * unbiased);
    }
  }
  __syncthreads();
  const double g = gamma[c] / sqrt(var + eps), b = beta[c] - mean * g;
  for (std::int64_t i = threadIdx.x; i < M; i += blockDim.x) {
    const std::int64_t at = (i / HW * C + c) * HW + i % HW;
    float v = static_cast<float>(in[at] * g + b);
    // The residual Add fused in: the same float sum the Add kernel computes, so the bits do not change.
    if (residual) v += residual[at];
    out[at] = relu && v < 0.f ? 0.f : v;  // BN + ReLU fused when the ReLU is the only consumer
  }
}

}  // namespace

void batchnorm_forward_eval(float* out, const float* in, const float* gamma, const float* beta, const float* running_mean,
                            const float* running_var, int N, int C, int HW, float eps, bool relu, cudaStream_t s, const float* residual) {
  const std::int64_t n = static_cast<std::int64_t>(N) * C * HW;
  TB_LAUNCH(bn_eval_k, blocks_for(n), kThreads, 0, s)(out, in, gamma, beta, running_mean, running_var, n, C, HW, eps, relu, residual);
  TB_CUDA_LAUNCH_CHECK();
}

void batchnorm_backward(float* din, float* dgamma, float* dbeta, const float* dout, const float* in, const float* gamma,
                        const float* save_mean, const float* save_invstd, int N, int C, int HW, cudaStream_t s) {
  TB_LAUNCH(bn_backward_k, C, kThreads, 0, s)(din, dgamma, dbeta, dout, in, gamma, save_mean, save_invstd, N, C, HW);
  TB_CUDA_LAUNCH_CHECK();
}

void batchnorm_forward_train(float* out, float* save_mean, float* save_invstd, const float* in, const float* gamma, const float* beta,
                             float* running_mean, float* running_var, int N, int C, int HW, float momentum, float eps, cudaStream_t s,
                             bool relu, const float* residual) {
  TB_LAUNCH(bn_train_k, C, kThreads, 0, s)(out, save_mean, save_invstd, in, gamma, beta, running_mean, running_var, N, C, HW, momentum, eps, relu,
                                           residual);
  TB_CUDA_LAUNCH_CHECK();
}

}  // namespace tb::cuda
