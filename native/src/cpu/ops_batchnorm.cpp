// Batch norm per channel over (N, HW). Sums run in double and in a fixed
// order per channel, so results do not depend on the thread count.
#include <cmath>

#include "core/threads.h"
#include "cpu/ops.h"

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

}  // namespace

template <typename T>
void batchnorm_forward_train(T* out, T* save_mean, T* save_invstd, const T* in, const T* gamma, const T* beta,
                             T* running_mean, T* running_var, int N, int C, int HW, T momentum, T eps,
                             ThreadPool* pool) {
  const std::int64_t M = static_cast<std::int64_t>(N) * HW;
  for_channels(C, pool, [&](int c) {
    double sum = 0, sq = 0;
    for (int n = 0; n < N; ++n) {
      const T* x = in + (static_cast<std::int64_t>(n) * C + c) * HW;
      for (int i = 0; i < HW; ++i) sum += x[i];
    }
    const double mean = sum / M;
    for (int n = 0; n < N; ++n) {
      const T* x = in + (static_cast<std::int64_t>(n) * C + c) * HW;
      for (int i = 0; i < HW; ++i) sq += (x[i] - mean) * (x[i] - mean);
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
    const double g = gamma[c] * invstd, b = beta[c] - mean * g;
    for (int n = 0; n < N; ++n) {
      const std::int64_t off = (static_cast<std::int64_t>(n) * C + c) * HW;
      for (int i = 0; i < HW; ++i) out[off + i] = static_cast<T>(in[off + i] * g + b);
    }
  });
}

template <typename T>
void batchnorm_forward_eval(T* out, const T* in, const T* gamma, const T* beta, const T* running_mean,
                            const T* running_var, int N, int C, int HW, T eps, ThreadPool* pool) {
  for_channels(C, pool, [&](int c) {
    const double invstd = 1.0 / std::sqrt(static_cast<double>(running_var[c]) + eps);
    const double g = gamma[c] * invstd, b = beta[c] - running_mean[c] * g;
    for (int n = 0; n < N; ++n) {
      const std::int64_t off = (static_cast<std::int64_t>(n) * C + c) * HW;
      for (int i = 0; i < HW; ++i) out[off + i] = static_cast<T>(in[off + i] * g + b);
    }
  });
}

template <typename T>
void batchnorm_backward(T* din, T* dgamma, T* dbeta, const T* dout, const T* in, const T* gamma, const T* save_mean,
                        const T* save_invstd, int N, int C, int HW, ThreadPool* pool) {
  const double M = static_cast<double>(N) * HW;
  for_channels(C, pool, [&](int c) {
    const double mean = save_mean[c], invstd = save_invstd[c];
    double sum_dy = 0, sum_dy_xhat = 0;
    for (int n = 0; n < N; ++n) {
      const std::int64_t off = (static_cast<std::int64_t>(n) * C + c) * HW;
      for (int i = 0; i < HW; ++i) {
        sum_dy += dout[off + i];
        sum_dy_xhat += dout[off + i] * (in[off + i] - mean) * invstd;
      }
    }
    dbeta[c] += static_cast<T>(sum_dy);
    dgamma[c] += static_cast<T>(sum_dy_xhat);
    if (!din) return;
    const double k = gamma[c] * invstd / M;
    for (int n = 0; n < N; ++n) {
      const std::int64_t off = (static_cast<std::int64_t>(n) * C + c) * HW;
      for (int i = 0; i < HW; ++i) {
        const double xhat = (in[off + i] - mean) * invstd;
        din[off + i] = static_cast<T>(k * (M * dout[off + i] - sum_dy - xhat * sum_dy_xhat));
      }
    }
  });
}

#define TB_INSTANTIATE(T)                                                                                        \
  template void batchnorm_forward_train<T>(T*, T*, T*, const T*, const T*, const T*, T*, T*, int, int, int, T, T, \
                                           ThreadPool*);                                                         \
  template void batchnorm_forward_eval<T>(T*, const T*, const T*, const T*, const T*, const T*, int, int, int, T,  \
                                          ThreadPool*);                                                          \
  template void batchnorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*, int, int, int, \
                                      ThreadPool*);
TB_INSTANTIATE(float)
TB_INSTANTIATE(double)
#undef TB_INSTANTIATE

}  // namespace tb
