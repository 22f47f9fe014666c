// Losses on the device, as cpu/ops_loss.cpp: per-row losses and their gradients, fp16
// loss scaling, and the device-side sums (loss, hits) the host reads only when it asks.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/errors.h"
#include "cuda/cuda_check.h"
#include "cuda/kernel_utils.cuh"
#include "cuda/kernels.h"

namespace tb::cuda {
namespace {

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

}  // namespace

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

void softmax_ce_soft(float* row_loss, float* dlogits, const float* logits, const float* targets, const float* mask, int B, int K,
                     float grad_scale, const float* rows_counted, cudaStream_t s) {
  TB_LAUNCH(softmax_soft_k, B, kThreads, 0, s)(row_loss, dlogits, logits, targets, mask, K, grad_scale, rows_counted);
  TB_CUDA_LAUNCH_CHECK();
}

void bce_logits(float* row_loss, float* dlogits, const float* logits, const float* targets, int B, float grad_scale, cudaStream_t s) {
  TB_LAUNCH(bce_k, blocks_for(B), kThreads, 0, s)(row_loss, dlogits, logits, targets, B, grad_scale);
  TB_CUDA_LAUNCH_CHECK();
}

void softmax_ce(float* row_loss, float* dlogits, const float* logits, const std::int32_t* labels, int B, int K, float grad_scale,
                cudaStream_t s) {
  TB_LAUNCH(softmax_ce_k, B, kThreads, 0, s)(row_loss, dlogits, logits, labels, B, K, grad_scale);
  TB_CUDA_LAUNCH_CHECK();
}

}  // namespace tb::cuda
