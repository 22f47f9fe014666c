// Backward passes and the remaining forward ops of a training step.
#include "cuda/cuda_check.h"
#include "cuda/kernel_utils.cuh"
#include "cuda/kernels.h"

namespace tb::cuda {
namespace {

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

// One thread per column: summing down the rows in order matches the CPU's order.
__global__ void bias_grad_k(float* db, const float* dout, int rows, int cols) {
  TB_GRID_LOOP(c, cols) {
    float s = 0;
    for (int r = 0; r < rows; ++r) s += dout[static_cast<std::int64_t>(r) * cols + c];
    db[c] += s;
  }
}

__global__ void softmax_soft_k(float* row_loss, float* dlogits, const float* logits, const float* targets, const float* mask, int K,
                               float grad_scale, const float* counted) {
  const int r = blockIdx.x;
  const float rows_counted = counted ? *counted : static_cast<float>(gridDim.x);
  const float* z = logits + static_cast<std::int64_t>(r) * K;
  const float* t = targets + static_cast<std::int64_t>(r) * K;
  float* d = dlogits ? dlogits + static_cast<std::int64_t>(r) * K : nullptr;
  const double w = mask ? mask[r] : 1.0;
  if (w == 0.0 || rows_counted == 0.f) {
    if (threadIdx.x == 0) row_loss[r] = 0.f;
    if (d)
      for (int k = threadIdx.x; k < K; k += blockDim.x) d[k] = 0.f;
    return;
  }
  double m = -INFINITY;
  for (int k = threadIdx.x; k < K; k += blockDim.x) m = fmax(m, static_cast<double>(z[k]));
  m = block_max(m);
  double s = 0;
  for (int k = threadIdx.x; k < K; k += blockDim.x) s += exp(z[k] - m);
  __shared__ double lse, tsum;
  const double ss = block_sum(s);
  if (threadIdx.x == 0) lse = m + log(ss);
  __syncthreads();
  double tl = 0, row = 0;
  for (int k = threadIdx.x; k < K; k += blockDim.x) {
    tl += t[k];
    row += t[k] * (lse - z[k]);
  }
  const double total_t = block_sum(tl);
  if (threadIdx.x == 0) tsum = total_t;
  const double total_row = block_sum(row);
  if (threadIdx.x == 0) row_loss[r] = static_cast<float>(w * total_row);
  __syncthreads();
  if (d)
    for (int k = threadIdx.x; k < K; k += blockDim.x)
      d[k] = static_cast<float>(w * (exp(z[k] - lse) * tsum - t[k]) * grad_scale / rows_counted);
}

__global__ void bce_k(float* row_loss, float* dlogits, const float* logits, const float* targets, int B, float grad_scale) {
  TB_GRID_LOOP(b, B) {
    const double x = logits[b], t = targets[b];
    row_loss[b] = static_cast<float>(fmax(x, 0.0) - x * t + log1p(exp(-fabs(x))));
    if (dlogits) dlogits[b] = static_cast<float>((1.0 / (1.0 + exp(-x)) - t) * grad_scale / B);
  }
}

// col (C*KH*KW, nb*OH*OW): one thread per element.
__global__ void im2col_k(float* col, const float* in, int n0, int nb, int C, int H, int W, int KH, int KW, int stride, int pad, int OH,
                         int OW) {
  const std::int64_t ohw = static_cast<std::int64_t>(OH) * OW, cols = nb * ohw, total = static_cast<std::int64_t>(C) * KH * KW * cols;
  TB_GRID_LOOP(i, total) {
    const std::int64_t r = i / cols, q = i % cols;
    const int c = static_cast<int>(r / (KH * KW)), kh = static_cast<int>(r / KW % KH), kw = static_cast<int>(r % KW);
    const int n = static_cast<int>(q / ohw), oh = static_cast<int>(q % ohw / OW), ow = static_cast<int>(q % OW);
    const int ih = oh * stride - pad + kh, iw = ow * stride - pad + kw;
    col[i] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? in[((static_cast<std::int64_t>(n0 + n) * C + c) * H + ih) * W + iw] : 0.f;
  }
}

// din: one thread per input element gathers every col entry that read it (no atomics, deterministic).
__global__ void col2im_k(float* din, const float* col, int n0, int nb, int C, int H, int W, int KH, int KW, int stride, int pad, int OH,
                         int OW) {
  const std::int64_t ohw = static_cast<std::int64_t>(OH) * OW, cols = nb * ohw, total = static_cast<std::int64_t>(nb) * C * H * W;
  TB_GRID_LOOP(i, total) {
    const int iw = static_cast<int>(i % W), ih = static_cast<int>(i / W % H), c = static_cast<int>(i / (W * H) % C), n = static_cast<int>(i / (static_cast<std::int64_t>(W) * H * C));
    float s = 0;
    for (int kh = 0; kh < KH; ++kh)
      for (int kw = 0; kw < KW; ++kw) {
        const int oh_s = ih + pad - kh, ow_s = iw + pad - kw;
        if (oh_s < 0 || ow_s < 0 || oh_s % stride || ow_s % stride) continue;
        const int oh = oh_s / stride, ow = ow_s / stride;
        if (oh >= OH || ow >= OW) continue;
        s += col[((static_cast<std::int64_t>(c) * KH + kh) * KW + kw) * cols + n * ohw + static_cast<std::int64_t>(oh) * OW + ow];
      }
    din[(static_cast<std::int64_t>(n0) * C * H * W) + i] = s;
  }
}

}  // namespace

void batchnorm_backward(float* din, float* dgamma, float* dbeta, const float* dout, const float* in, const float* gamma,
                        const float* save_mean, const float* save_invstd, int N, int C, int HW, cudaStream_t s) {
  TB_LAUNCH(bn_backward_k, C, kThreads, 0, s)(din, dgamma, dbeta, dout, in, gamma, save_mean, save_invstd, N, C, HW);
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
void bias_grad(float* db, const float* dout, int rows, int cols, cudaStream_t s) {
  TB_LAUNCH(bias_grad_k, blocks_for(cols), kThreads, 0, s)(db, dout, rows, cols);
  TB_CUDA_LAUNCH_CHECK();
}
void softmax_ce_soft(float* row_loss, float* dlogits, const float* logits, const float* targets, const float* mask, int B, int K,
                     float grad_scale, const float* rows_counted, cudaStream_t s) {
  TB_LAUNCH(softmax_soft_k, B, kThreads, 0, s)(row_loss, dlogits, logits, targets, mask, K, grad_scale, rows_counted);
  TB_CUDA_LAUNCH_CHECK();
}
void bce_logits(float* row_loss, float* dlogits, const float* logits, const float* targets, int B, float grad_scale, cudaStream_t s) {
  TB_LAUNCH(bce_k, blocks_for(B), kThreads, 0, s)(row_loss, dlogits, logits, targets, B, grad_scale);
  TB_CUDA_LAUNCH_CHECK();
}
void im2col(float* col, const float* in, int N0, int nb, int C, int H, int W, int KH, int KW, int stride, int pad, cudaStream_t s) {
  const int OH = (H + 2 * pad - KH) / stride + 1, OW = (W + 2 * pad - KW) / stride + 1;
  const std::int64_t total = static_cast<std::int64_t>(C) * KH * KW * nb * OH * OW;
  TB_LAUNCH(im2col_k, blocks_for(total), kThreads, 0, s)(col, in, N0, nb, C, H, W, KH, KW, stride, pad, OH, OW);
  TB_CUDA_LAUNCH_CHECK();
}
void col2im(float* din, const float* col, int N0, int nb, int C, int H, int W, int KH, int KW, int stride, int pad, cudaStream_t s) {
  const int OH = (H + 2 * pad - KH) / stride + 1, OW = (W + 2 * pad - KW) / stride + 1;
  const std::int64_t total = static_cast<std::int64_t>(nb) * C * H * W;
  TB_LAUNCH(col2im_k, blocks_for(total), kThreads, 0, s)(din, col, N0, nb, C, H, W, KH, KW, stride, pad, OH, OW);
  TB_CUDA_LAUNCH_CHECK();
}

}  // namespace tb::cuda
