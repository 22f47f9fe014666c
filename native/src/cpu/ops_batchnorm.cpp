// Batch norm per channel over (N, HW), two layouts:
// - HW > 1 ((N, C, HW) tensors, e.g. the CUDA parity checks' reference): a channel is N runs of HW
//   values. Sums accumulate 16 lanes of T over blocks of 1024 values and add the blocks in double,
//   in the same order per channel, so results do not depend on the thread count and the inner
//   loops vectorize.
// - HW == 1 (rows: channels-last activations and dense features, x is (M = N, C) row-major): a
//   channel is a column with stride C, so the inner loops run along C instead, over fixed blocks
//   of rows whose per-channel sums are kept per block and added in double in block order (again
//   independent of the thread count). That path is cpu/ops_batchnorm_rows.cpp.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/threads.h"
#include "cpu/batchnorm_rows.h"
#include "cpu/ops.h"
#include "cpu/simd_clones.h"

namespace tb {
namespace {

template <typename F>
void for_channels(int C, ThreadPool* pool, F&& f) {
  auto body = [&](std::int64_t b, std::int64_t e, int) {
    for (std::int64_t c = b; c < e; ++c) f(static_cast<int>(c));
  };
  if (pool) pool->parallel_for(C, body, 1);
  else body(0, C, 0);
}

constexpr std::int64_t kMaskBlock = 1024;

// Sum of term(i) for i in [0, n).
template <typename T, typename F>
TB_ALWAYS_INLINE inline double block_sum(std::int64_t n, F&& term) {
  constexpr int kLanes = 16;
  constexpr std::int64_t kBlock = kMaskBlock;
  double total = 0;
  for (std::int64_t b = 0; b < n; b += kBlock) {
    const std::int64_t e = std::min(n, b + kBlock);
    T acc[kLanes] = {};
    std::int64_t i = b;
    for (; i + kLanes <= e; i += kLanes)
      for (int l = 0; l < kLanes; ++l) acc[l] += term(i + l);
    T s = 0;
    for (int l = 0; l < kLanes; ++l) s += acc[l];
    for (; i < e; ++i) s += term(i);
    total += s;
  }
  return total;
}

// One channel's statistics and normalisation (see batchnorm_forward_train).
template <typename T>
TB_ALWAYS_INLINE inline void forward_channel_impl(T* out, T* save_mean, T* save_invstd, const T* in, const T* gamma,
                                                  const T* beta, T* running_mean, T* running_var, int N, int C,
                                                  int HW, T momentum, T eps, int c) {
  const std::int64_t M = static_cast<std::int64_t>(N) * HW;
  double sum = 0, sq = 0;
  for (int n = 0; n < N; ++n) {
    const T* x = in + (static_cast<std::int64_t>(n) * C + c) * HW;
    sum += block_sum<T>(HW, [x](std::int64_t i) { return x[i]; });
  }
  const double mean = sum / M;
  const T mean_t = static_cast<T>(mean);
  for (int n = 0; n < N; ++n) {
    const T* x = in + (static_cast<std::int64_t>(n) * C + c) * HW;
    sq += block_sum<T>(HW, [x, mean_t](std::int64_t i) {
      const T d = x[i] - mean_t;
      return d * d;
    });
  }
  const double var = sq / M;  // biased, as used for normalising
  const double invstd = 1.0 / std::sqrt(var + eps);
  save_mean[c] = static_cast<T>(mean);
  save_invstd[c] = static_cast<T>(invstd);
  if (running_mean) {
    // Running variance is unbiased, as in PyTorch, so checkpoints mean the same there.
    const double unbiased = M > 1 ? sq / (M - 1) : var;
    running_mean[c] = static_cast<T>((1 - momentum) * running_mean[c] + momentum * mean);
    running_var[c] = static_cast<T>((1 - momentum) * running_var[c] + momentum * unbiased);
  }
  const T g = static_cast<T>(gamma[c] * invstd), b = static_cast<T>(beta[c] - mean * gamma[c] * invstd);
  for (int n = 0; n < N; ++n) {
    const std::int64_t off = (static_cast<std::int64_t>(n) * C + c) * HW;
    const T* x = in + off;
    T* y = out + off;
    for (int i = 0; i < HW; ++i) y[i] = x[i] * g + b;
  }
}

TB_SIMD_CLONES void forward_channel(float* out, float* save_mean, float* save_invstd, const float* in,
                                    const float* gamma, const float* beta, float* running_mean, float* running_var,
                                    int N, int C, int HW, float momentum, float eps, int c) {
  forward_channel_impl(out, save_mean, save_invstd, in, gamma, beta, running_mean, running_var, N, C, HW, momentum,
                       eps, c);
}
void forward_channel(double* out, double* save_mean, double* save_invstd, const double* in, const double* gamma,
                     const double* beta, double* running_mean, double* running_var, int N, int C, int HW,
                     double momentum, double eps, int c) {
  forward_channel_impl(out, save_mean, save_invstd, in, gamma, beta, running_mean, running_var, N, C, HW, momentum,
                       eps, c);
}

}  // namespace


template <typename T>
void batchnorm_forward_train(T* out, T* save_mean, T* save_invstd, const T* in, const T* gamma, const T* beta,
                             T* running_mean, T* running_var, int N, int C, int HW, T momentum, T eps,
                             ThreadPool* pool) {
  if (HW == 1) {
    forward_train_rows(out, save_mean, save_invstd, in, gamma, beta, running_mean, running_var, N, C, momentum, eps,
                       pool);
    return;
  }
  for_channels(C, pool, [&](int c) {
    forward_channel(out, save_mean, save_invstd, in, gamma, beta, running_mean, running_var, N, C, HW, momentum, eps,
                    c);
  });
}

template <typename T>
void batchnorm_forward_eval(T* out, const T* in, const T* gamma, const T* beta, const T* running_mean,
                            const T* running_var, int N, int C, int HW, T eps, ThreadPool* pool) {
  if (HW == 1) {
    forward_eval_rows(out, in, gamma, beta, running_mean, running_var, N, C, eps, pool);
    return;
  }
  for_channels(C, pool, [&](int c) {
    const double invstd = 1.0 / std::sqrt(static_cast<double>(running_var[c]) + eps);
    const T g = static_cast<T>(gamma[c] * invstd), b = static_cast<T>(beta[c] - running_mean[c] * gamma[c] * invstd);
    for (int n = 0; n < N; ++n) {
      const std::int64_t off = (static_cast<std::int64_t>(n) * C + c) * HW;
      for (int i = 0; i < HW; ++i) out[off + i] = in[off + i] * g + b;
    }
  });
}

namespace {

// One channel's backward (see batchnorm_backward).
template <typename T>
TB_ALWAYS_INLINE inline void backward_channel_impl(T* din, T* dgamma, T* dbeta, const T* dout, const T* in,
                                                   const T* gamma, const T* save_mean, const T* save_invstd, int N,
                                                   int C, int HW, const T* relu_out, int c) {
  const double M = static_cast<double>(N) * HW;
  const double mean = save_mean[c], invstd = save_invstd[c];
  const T mean_t = save_mean[c];
  // With a ReLU folded in, each block of its gradient is first masked into an L1-sized buffer
  // (the plain loops vectorize; a conditional inside the sums did not).
  T masked[kMaskBlock];
  auto grad_block = [&](const T* dy, const T* r, std::int64_t len) -> const T* {
    if (!r) return dy;
    for (std::int64_t i = 0; i < len; ++i) masked[i] = r[i] > T(0) ? dy[i] : T(0);
    return masked;
  };
  double sum_dy = 0, sum_dy_xmu = 0;
  for (int n = 0; n < N; ++n) {
    const std::int64_t off = (static_cast<std::int64_t>(n) * C + c) * HW;
    for (std::int64_t b0 = 0; b0 < HW; b0 += kMaskBlock) {
      const std::int64_t len = std::min<std::int64_t>(kMaskBlock, HW - b0);
      const T* g = grad_block(dout + off + b0, relu_out ? relu_out + off + b0 : nullptr, len);
      const T* x = in + off + b0;
      sum_dy += block_sum<T>(len, [g](std::int64_t i) { return g[i]; });
      sum_dy_xmu += block_sum<T>(len, [g, x, mean_t](std::int64_t i) { return g[i] * (x[i] - mean_t); });
    }
  }
  const double sum_dy_xhat = sum_dy_xmu * invstd;
  dbeta[c] += static_cast<T>(sum_dy);
  dgamma[c] += static_cast<T>(sum_dy_xhat);
  if (!din) return;
  // din = k (M dy - sum_dy - xhat sum_dy_xhat) with k = gamma invstd / M, as a*dy + b*x + e.
  const double k = gamma[c] * invstd / M;
  const T a = static_cast<T>(k * M), b = static_cast<T>(-k * invstd * sum_dy_xhat);
  const T e = static_cast<T>(-k * sum_dy + k * invstd * sum_dy_xhat * mean);
  for (int n = 0; n < N; ++n) {
    const std::int64_t off = (static_cast<std::int64_t>(n) * C + c) * HW;
    for (std::int64_t b0 = 0; b0 < HW; b0 += kMaskBlock) {
      const std::int64_t len = std::min<std::int64_t>(kMaskBlock, HW - b0);
      const T* g = grad_block(dout + off + b0, relu_out ? relu_out + off + b0 : nullptr, len);
      const T* x = in + off + b0;
      T* dx = din + off + b0;
      for (std::int64_t i = 0; i < len; ++i) dx[i] = a * g[i] + b * x[i] + e;
    }
  }
}

TB_SIMD_CLONES void backward_channel(float* din, float* dgamma, float* dbeta, const float* dout, const float* in,
                                     const float* gamma, const float* save_mean, const float* save_invstd, int N,
                                     int C, int HW, const float* relu_out, int c) {
  backward_channel_impl(din, dgamma, dbeta, dout, in, gamma, save_mean, save_invstd, N, C, HW, relu_out, c);
}
void backward_channel(double* din, double* dgamma, double* dbeta, const double* dout, const double* in,
                      const double* gamma, const double* save_mean, const double* save_invstd, int N, int C, int HW,
                      const double* relu_out, int c) {
  backward_channel_impl(din, dgamma, dbeta, dout, in, gamma, save_mean, save_invstd, N, C, HW, relu_out, c);
}

}  // namespace

template <typename T>
void batchnorm_backward(T* din, T* dgamma, T* dbeta, const T* dout, const T* in, const T* gamma, const T* save_mean,
                        const T* save_invstd, int N, int C, int HW, ThreadPool* pool, const T* relu_out) {
  if (HW == 1) {
    backward_rows(din, dgamma, dbeta, dout, in, gamma, save_mean, save_invstd, N, C, pool, relu_out);
    return;
  }
  for_channels(C, pool, [&](int c) {
    backward_channel(din, dgamma, dbeta, dout, in, gamma, save_mean, save_invstd, N, C, HW, relu_out, c);
  });
}

#define TB_INSTANTIATE(T)                                                                                        \
  template void batchnorm_forward_train<T>(T*, T*, T*, const T*, const T*, const T*, T*, T*, int, int, int, T, T, \
                                           ThreadPool*);                                                         \
  template void batchnorm_forward_eval<T>(T*, const T*, const T*, const T*, const T*, const T*, int, int, int, T,  \
                                          ThreadPool*);                                                          \
  template void batchnorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*, int, int, int, \
                                      ThreadPool*, const T*);
TB_INSTANTIATE(float)
TB_INSTANTIATE(double)
#undef TB_INSTANTIATE

}  // namespace tb
