#include "cuda/cuda_check.h"
#include "cuda/kernel_utils.cuh"
#include "cuda/kernels.h"

namespace tb::cuda {
namespace {

// One block per row: log-sum-exp, the loss, and the gradient (softmax - onehot) * scale / B.
__global__ void softmax_ce_k(float* row_loss, float* dlogits, const float* logits, const std::int32_t* labels, int B, int K,
                             float grad_scale) {
  const int r = blockIdx.x;
  const float* z = logits + static_cast<std::int64_t>(r) * K;
  double m = -INFINITY;
  for (int k = threadIdx.x; k < K; k += blockDim.x) m = fmax(m, static_cast<double>(z[k]));
  m = block_max(m);
  double s = 0;
  for (int k = threadIdx.x; k < K; k += blockDim.x) s += exp(z[k] - m);
  __shared__ double lse;
  s = block_sum(s);
  if (threadIdx.x == 0) lse = m + log(s);
  __syncthreads();
  const int y = labels[r];
  if (threadIdx.x == 0) row_loss[r] = static_cast<float>(lse - z[y]);
  if (dlogits) {
    float* d = dlogits + static_cast<std::int64_t>(r) * K;
    for (int k = threadIdx.x; k < K; k += blockDim.x)
      d[k] = static_cast<float>((exp(z[k] - lse) - (k == y ? 1.0 : 0.0)) * grad_scale / B);
  }
}

// One block per channel: mean, biased variance for normalising, unbiased for the running estimate.
__global__ void bn_train_k(float* out, float* save_mean, float* save_invstd, const float* in, const float* gamma, const float* beta,
                           float* rm, float* rv, int N, int C, int HW, float momentum, float eps, bool relu) {
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
    const float v = static_cast<float>(in[at] * g + b);
    out[at] = relu && v < 0.f ? 0.f : v;  // BN + ReLU fused when the ReLU is the only consumer
  }
}

}  // namespace

void softmax_ce(float* row_loss, float* dlogits, const float* logits, const std::int32_t* labels, int B, int K, float grad_scale,
                cudaStream_t s) {
  TB_LAUNCH(softmax_ce_k, B, kThreads, 0, s)(row_loss, dlogits, logits, labels, B, K, grad_scale);
  TB_CUDA_LAUNCH_CHECK();
}

void batchnorm_forward_train(float* out, float* save_mean, float* save_invstd, const float* in, const float* gamma, const float* beta,
                             float* running_mean, float* running_var, int N, int C, int HW, float momentum, float eps, cudaStream_t s,
                             bool relu) {
  TB_LAUNCH(bn_train_k, C, kThreads, 0, s)(out, save_mean, save_invstd, in, gamma, beta, running_mean, running_var, N, C, HW, momentum, eps, relu);
  TB_CUDA_LAUNCH_CHECK();
}

}  // namespace tb::cuda
