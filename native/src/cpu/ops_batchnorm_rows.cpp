// Batch norm on rows (HW == 1, cpu/batchnorm_rows.h): x is (M, C) row-major. A channel is a column
// with stride C, so the inner loops run along C, over fixed blocks of rows whose per-channel sums
// are kept per block and added in double in block order: results do not depend on the thread count.
#include "cpu/batchnorm_rows.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/threads.h"
#include "cpu/simd_clones.h"

namespace tb {
namespace {

// Rows per block. A block's per-channel sums are T (float: 64 values, as many as a lane of the
// per-channel path sums per 1024-value block); blocks are added in double.
constexpr std::int64_t kRowBlock = 64;
// Smallest share of a pass worth waking a pool thread for, in values: waking the pool took 4 us
// (median, 2 threads, development machine), about one pass over 2^16 floats in cache.
constexpr std::int64_t kMinValuesPerThread = 1 << 16;
// Fewer channels than this, and not a multiple of 16, are read k rows at a time as one wide row
// of k*C values, a multiple of 16 (24 channels as 48): the loops along C then run whole AVX-512
// vectors with no remainder. On cached data, 1 thread, M = 20736: 24 channels' forward 20% and
// backward 8% faster, 3 channels' 2-3x.
constexpr int kWidenBelow = 64;
constexpr int kMaxWide = 1024;  // the widest wide row, on the stack
static_assert(16 * (kWidenBelow - 1) <= kMaxWide, "a wide row of k*C values must fit kMaxWide");

std::int64_t row_blocks(std::int64_t M) { return (M + kRowBlock - 1) / kRowBlock; }

// Rows per wide row (k above): divides 16, hence every full block.
int widen(int C) { return C % 16 == 0 || C >= kWidenBelow ? 1 : 16 / std::gcd(C, 16); }

// A per-channel array repeated k times, for loops along a wide row.
template <typename T>
std::vector<T> repeat(const T* v, int C, int k) {
  std::vector<T> w(static_cast<std::size_t>(C) * k);
  for (int j = 0; j < k; ++j) std::copy(v, v + C, w.begin() + static_cast<std::ptrdiff_t>(j) * C);
  return w;
}

// f(row_begin, row_end, block_begin, block_end) on whole blocks split over the pool. Which thread
// runs a block never changes what the block computes.
template <typename F>
void for_row_blocks(std::int64_t M, int C, ThreadPool* pool, F&& f) {
  const std::int64_t nb = row_blocks(M);
  auto body = [&](std::int64_t b, std::int64_t e, int) { f(b * kRowBlock, std::min(M, e * kRowBlock), b, e); };
  const std::int64_t min_blocks = std::max<std::int64_t>(1, kMinValuesPerThread / (kRowBlock * C));
  if (pool) pool->parallel_for(nb, body, min_blocks);
  else body(0, nb, 0);
}

// total[c] = sum over blocks, in block order, of part (nb, C).
template <typename T>
void add_blocks(double* total, const T* part, std::int64_t nb, int C) {
  std::fill(total, total + C, 0.0);
  for (std::int64_t b = 0; b < nb; ++b)
    for (int c = 0; c < C; ++c) total[c] += part[b * C + c];
}

// part[c] += sum over `rows` rows of width W of term(row, c). Four rows per step: fewer round trips
// of part through memory (a store-to-load chain per row limits small W), pairs added first.
template <typename T, typename Term>
TB_ALWAYS_INLINE inline void add_column_sums(T* __restrict part, std::int64_t rows, int W, Term&& term) {
  std::int64_t r = 0;
  for (; r + 4 <= rows; r += 4)
    for (int c = 0; c < W; ++c) part[c] += (term(r, c) + term(r + 1, c)) + (term(r + 2, c) + term(r + 3, c));
  for (; r < rows; ++r)
    for (int c = 0; c < W; ++c) part[c] += term(r, c);
}

// One block's per-channel sums into part (C, zeroed here): sums(out, row0, rows, width) adds the
// column sums of `rows` rows from row0 on, read as rows of `width`. With k > 1 the block's whole
// wide rows go first into a W-wide buffer whose k segments are then added in order, then the rows
// left over (only in the last block).
template <typename T, typename Sums>
TB_ALWAYS_INLINE inline void block_sums(T* __restrict part, std::int64_t rows, int C, int k, Sums&& sums) {
  for (int c = 0; c < C; ++c) part[c] = T(0);
  if (k == 1) return sums(part, 0, rows, C);
  const int W = k * C;
  T wide[kMaxWide];
  for (int c = 0; c < W; ++c) wide[c] = T(0);
  const std::int64_t whole = rows / k;
  sums(wide, 0, whole, W);
  for (int j = 0; j < k; ++j)
    for (int c = 0; c < C; ++c) part[c] += wide[j * C + c];
  sums(part, whole * k, rows - whole * k, C);
}

// Blocks [b0, b1): part (nb, C) gets each block's sums of x, or of (x - mean)^2 when mean (repeated
// k times) is given.
template <typename T>
TB_ALWAYS_INLINE inline void column_sums_impl(T* __restrict part, const T* __restrict x, const T* __restrict mean,
                                              std::int64_t M, int C, int k, std::int64_t b0, std::int64_t b1) {
  for (std::int64_t b = b0; b < b1; ++b) {
    const std::int64_t r0 = b * kRowBlock, rows = std::min(kRowBlock, M - r0);
    const T* xb = x + r0 * C;
    block_sums(part + b * C, rows, C, k, [xb, mean, C](T* out, std::int64_t row0, std::int64_t n, int W) {
      const T* xr = xb + row0 * C;
      if (!mean) {
        add_column_sums(out, n, W, [xr, W](std::int64_t r, int c) { return xr[r * W + c]; });
      } else {
        add_column_sums(out, n, W, [xr, mean, W](std::int64_t r, int c) {
          const T d = xr[r * W + c] - mean[c];
          return d * d;
        });
      }
    });
  }
}

TB_SIMD_CLONES void column_sums(float* part, const float* x, const float* mean, std::int64_t M, int C, int k,
                                std::int64_t b0, std::int64_t b1) {
  column_sums_impl(part, x, mean, M, C, k, b0, b1);
}
void column_sums(double* part, const double* x, const double* mean, std::int64_t M, int C, int k, std::int64_t b0,
                 std::int64_t b1) {
  column_sums_impl(part, x, mean, M, C, k, b0, b1);
}

// Rows [r0, r1) of width C, of which whole groups of k as wide rows: f(row0, rows, width).
template <typename F>
TB_ALWAYS_INLINE inline void widened_rows(std::int64_t r0, std::int64_t r1, int C, int k, F&& f) {
  const std::int64_t whole = (r1 - r0) / k;
  f(r0, whole, k * C);
  f(r0 + whole * k, r1 - r0 - whole * k, C);
}

// Rows [r0, r1): y = x * scale + shift per channel (in place allowed; scale and shift repeated k times).
template <typename T>
TB_ALWAYS_INLINE inline void affine_rows_impl(T* y, const T* x, const T* __restrict scale, const T* __restrict shift,
                                              int C, int k, std::int64_t r0, std::int64_t r1) {
  widened_rows(r0, r1, C, k, [&](std::int64_t row0, std::int64_t rows, int W) {
    const T* xr = x + row0 * C;
    T* yr = y + row0 * C;
    for (std::int64_t r = 0; r < rows; ++r)
      for (int c = 0; c < W; ++c) yr[r * W + c] = xr[r * W + c] * scale[c] + shift[c];
  });
}

TB_SIMD_CLONES void affine_rows(float* y, const float* x, const float* scale, const float* shift, int C, int k,
                                std::int64_t r0, std::int64_t r1) {
  affine_rows_impl(y, x, scale, shift, C, k, r0, r1);
}
void affine_rows(double* y, const double* x, const double* scale, const double* shift, int C, int k, std::int64_t r0,
                 std::int64_t r1) {
  affine_rows_impl(y, x, scale, shift, C, k, r0, r1);
}

// The gradient reaching the batch norm's output: dy, or with a folded ReLU dy where relu_out > 0.
template <bool kRelu, typename T>
TB_ALWAYS_INLINE inline T grad_at(const T* dy, const T* relu_out, std::int64_t i) {
  const T g = dy[i];  // loaded unconditionally, so the select vectorizes without masked loads
  if constexpr (kRelu) return relu_out[i] > T(0) ? g : T(0);
  else return g;
}

// pdy[c] += sum of the gradient g, pdyx[c] += sum of g * (x - mean) over `rows` rows of width W
// (offsets relative to the row pointers), four rows per step as in add_column_sums.
template <bool kRelu, typename T>
TB_ALWAYS_INLINE inline void add_grad_sums(T* __restrict pdy, T* __restrict pdyx, const T* __restrict dy,
                                           const T* __restrict relu_out, const T* __restrict x,
                                           const T* __restrict mean, std::int64_t rows, int W) {
  std::int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const std::int64_t i0 = r * W, i1 = i0 + W, i2 = i1 + W, i3 = i2 + W;
    for (int c = 0; c < W; ++c) {
      const T g0 = grad_at<kRelu>(dy, relu_out, i0 + c), g1 = grad_at<kRelu>(dy, relu_out, i1 + c);
      const T g2 = grad_at<kRelu>(dy, relu_out, i2 + c), g3 = grad_at<kRelu>(dy, relu_out, i3 + c);
      const T m = mean[c];
      pdy[c] += (g0 + g1) + (g2 + g3);
      pdyx[c] += (g0 * (x[i0 + c] - m) + g1 * (x[i1 + c] - m)) + (g2 * (x[i2 + c] - m) + g3 * (x[i3 + c] - m));
    }
  }
  for (; r < rows; ++r) {
    const std::int64_t i0 = r * W;
    for (int c = 0; c < W; ++c) {
      const T g0 = grad_at<kRelu>(dy, relu_out, i0 + c);
      pdy[c] += g0;
      pdyx[c] += g0 * (x[i0 + c] - mean[c]);
    }
  }
}

// Blocks [b0, b1): per block and channel, the sums of the gradient g and of g * (x - mean) (mean
// repeated k times). The two sums go through block_sums as one buffer of 2C (2W when wide).
template <bool kRelu, typename T>
TB_ALWAYS_INLINE inline void grad_sums_blocks(T* part_dy, T* part_dyx, const T* dy, const T* relu_out, const T* x,
                                              const T* mean, std::int64_t M, int C, int k, std::int64_t b0,
                                              std::int64_t b1) {
  for (std::int64_t b = b0; b < b1; ++b) {
    const std::int64_t r0 = b * kRowBlock, rows = std::min(kRowBlock, M - r0);
    const std::int64_t off = r0 * C;
    T* pdy = part_dy + b * C;
    T* pdyx = part_dyx + b * C;
    for (int c = 0; c < C; ++c) pdy[c] = pdyx[c] = T(0);
    auto sums = [&](T* sdy, T* sdyx, std::int64_t row0, std::int64_t n, int W) {
      const std::int64_t o = off + row0 * C;
      add_grad_sums<kRelu>(sdy, sdyx, dy + o, kRelu ? relu_out + o : nullptr, x + o, mean, n, W);
    };
    if (k == 1) {
      sums(pdy, pdyx, 0, rows, C);
      continue;
    }
    const int W = k * C;
    T wide_dy[kMaxWide], wide_dyx[kMaxWide];
    for (int c = 0; c < W; ++c) wide_dy[c] = wide_dyx[c] = T(0);
    const std::int64_t whole = rows / k;
    sums(wide_dy, wide_dyx, 0, whole, W);
    for (int j = 0; j < k; ++j)
      for (int c = 0; c < C; ++c) pdy[c] += wide_dy[j * C + c], pdyx[c] += wide_dyx[j * C + c];
    sums(pdy, pdyx, whole * k, rows - whole * k, C);
  }
}

// Rows [r0, r1): din = a * g + b * x + e per channel (a, b, e repeated k times).
template <bool kRelu, typename T>
TB_ALWAYS_INLINE inline void grad_input_rows(T* din, const T* dy, const T* relu_out, const T* x, const T* __restrict a,
                                             const T* __restrict b, const T* __restrict e, int C, int k,
                                             std::int64_t r0, std::int64_t r1) {
  widened_rows(r0, r1, C, k, [&](std::int64_t row0, std::int64_t rows, int W) {
    const std::int64_t o = row0 * C;
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t i0 = o + r * W;
      T* dx = din + i0;
      const T* xr = x + i0;
      for (int c = 0; c < W; ++c) dx[c] = a[c] * grad_at<kRelu>(dy, relu_out, i0 + c) + b[c] * xr[c] + e[c];
    }
  });
}

template <typename T>
TB_ALWAYS_INLINE inline void grad_sums_impl(T* part_dy, T* part_dyx, const T* dy, const T* relu_out, const T* x,
                                            const T* mean, std::int64_t M, int C, int k, std::int64_t b0,
                                            std::int64_t b1) {
  if (relu_out) grad_sums_blocks<true>(part_dy, part_dyx, dy, relu_out, x, mean, M, C, k, b0, b1);
  else grad_sums_blocks<false>(part_dy, part_dyx, dy, relu_out, x, mean, M, C, k, b0, b1);
}
template <typename T>
TB_ALWAYS_INLINE inline void grad_input_impl(T* din, const T* dy, const T* relu_out, const T* x, const T* a, const T* b,
                                             const T* e, int C, int k, std::int64_t r0, std::int64_t r1) {
  if (relu_out) grad_input_rows<true>(din, dy, relu_out, x, a, b, e, C, k, r0, r1);
  else grad_input_rows<false>(din, dy, relu_out, x, a, b, e, C, k, r0, r1);
}

TB_SIMD_CLONES void grad_sums(float* part_dy, float* part_dyx, const float* dy, const float* relu_out, const float* x,
                              const float* mean, std::int64_t M, int C, int k, std::int64_t b0, std::int64_t b1) {
  grad_sums_impl(part_dy, part_dyx, dy, relu_out, x, mean, M, C, k, b0, b1);
}
void grad_sums(double* part_dy, double* part_dyx, const double* dy, const double* relu_out, const double* x,
               const double* mean, std::int64_t M, int C, int k, std::int64_t b0, std::int64_t b1) {
  grad_sums_impl(part_dy, part_dyx, dy, relu_out, x, mean, M, C, k, b0, b1);
}
TB_SIMD_CLONES void grad_input(float* din, const float* dy, const float* relu_out, const float* x, const float* a,
                               const float* b, const float* e, int C, int k, std::int64_t r0, std::int64_t r1) {
  grad_input_impl(din, dy, relu_out, x, a, b, e, C, k, r0, r1);
}
void grad_input(double* din, const double* dy, const double* relu_out, const double* x, const double* a,
                const double* b, const double* e, int C, int k, std::int64_t r0, std::int64_t r1) {
  grad_input_impl(din, dy, relu_out, x, a, b, e, C, k, r0, r1);
}

// The same arithmetic per channel as forward_channel_impl, on (M, C) rows.

}  // namespace

template <typename T>
void forward_train_rows(T* out, T* save_mean, T* save_invstd, const T* in, const T* gamma, const T* beta,
                        T* running_mean, T* running_var, std::int64_t M, int C, T momentum, T eps, ThreadPool* pool) {
  const std::int64_t nb = row_blocks(M);
  const int k = widen(C);
  std::vector<T> part(static_cast<std::size_t>(nb) * C), scale(C), shift(C);
  std::vector<double> sum(C), sq(C);
  for_row_blocks(M, C, pool, [&](std::int64_t, std::int64_t, std::int64_t b0, std::int64_t b1) {
    column_sums(part.data(), in, static_cast<const T*>(nullptr), M, C, k, b0, b1);
  });
  add_blocks(sum.data(), part.data(), nb, C);
  for (int c = 0; c < C; ++c) save_mean[c] = static_cast<T>(sum[c] / M);  // deviations are taken from this T mean
  const std::vector<T> mean_k = repeat(save_mean, C, k);
  for_row_blocks(M, C, pool, [&](std::int64_t, std::int64_t, std::int64_t b0, std::int64_t b1) {
    column_sums(part.data(), in, mean_k.data(), M, C, k, b0, b1);
  });
  add_blocks(sq.data(), part.data(), nb, C);
  for (int c = 0; c < C; ++c) {
    const double mean = sum[c] / M, var = sq[c] / M;  // biased, as used for normalising
    const double invstd = 1.0 / std::sqrt(var + eps);
    save_invstd[c] = static_cast<T>(invstd);
    if (running_mean) {
      const double unbiased = M > 1 ? sq[c] / (M - 1) : var;
      running_mean[c] = static_cast<T>((1 - momentum) * running_mean[c] + momentum * mean);
      running_var[c] = static_cast<T>((1 - momentum) * running_var[c] + momentum * unbiased);
    }
    scale[c] = static_cast<T>(gamma[c] * invstd);
    shift[c] = static_cast<T>(beta[c] - mean * gamma[c] * invstd);
  }
  const std::vector<T> scale_k = repeat(scale.data(), C, k), shift_k = repeat(shift.data(), C, k);
  for_row_blocks(M, C, pool, [&](std::int64_t r0, std::int64_t r1, std::int64_t, std::int64_t) {
    affine_rows(out, in, scale_k.data(), shift_k.data(), C, k, r0, r1);
  });
}

template <typename T>
void forward_eval_rows(T* out, const T* in, const T* gamma, const T* beta, const T* running_mean, const T* running_var,
                       std::int64_t M, int C, T eps, ThreadPool* pool) {
  const int k = widen(C);
  std::vector<T> scale(C), shift(C);
  for (int c = 0; c < C; ++c) {
    const double invstd = 1.0 / std::sqrt(static_cast<double>(running_var[c]) + eps);
    scale[c] = static_cast<T>(gamma[c] * invstd);
    shift[c] = static_cast<T>(beta[c] - running_mean[c] * gamma[c] * invstd);
  }
  const std::vector<T> scale_k = repeat(scale.data(), C, k), shift_k = repeat(shift.data(), C, k);
  for_row_blocks(M, C, pool, [&](std::int64_t r0, std::int64_t r1, std::int64_t, std::int64_t) {
    affine_rows(out, in, scale_k.data(), shift_k.data(), C, k, r0, r1);
  });
}

// The same arithmetic per channel as backward_channel_impl, on (M, C) rows.
template <typename T>
void backward_rows(T* din, T* dgamma, T* dbeta, const T* dout, const T* in, const T* gamma, const T* save_mean,
                   const T* save_invstd, std::int64_t M, int C, ThreadPool* pool, const T* relu_out) {
  const std::int64_t nb = row_blocks(M);
  const int k = widen(C);
  const std::vector<T> mean_k = repeat(save_mean, C, k);
  std::vector<T> part_dy(static_cast<std::size_t>(nb) * C), part_dyx(part_dy.size());
  for_row_blocks(M, C, pool, [&](std::int64_t, std::int64_t, std::int64_t b0, std::int64_t b1) {
    grad_sums(part_dy.data(), part_dyx.data(), dout, relu_out, in, mean_k.data(), M, C, k, b0, b1);
  });
  std::vector<double> sum_dy(C), sum_dy_xmu(C);
  add_blocks(sum_dy.data(), part_dy.data(), nb, C);
  add_blocks(sum_dy_xmu.data(), part_dyx.data(), nb, C);
  std::vector<T> a(C), b(C), e(C);
  for (int c = 0; c < C; ++c) {
    const double mean = save_mean[c], invstd = save_invstd[c];
    const double sum_dy_xhat = sum_dy_xmu[c] * invstd;
    dbeta[c] += static_cast<T>(sum_dy[c]);
    dgamma[c] += static_cast<T>(sum_dy_xhat);
    // din = k (M dy - sum_dy - xhat sum_dy_xhat) with k = gamma invstd / M, as a*dy + b*x + e.
    const double kk = gamma[c] * invstd / static_cast<double>(M);
    a[c] = static_cast<T>(kk * static_cast<double>(M));
    b[c] = static_cast<T>(-kk * invstd * sum_dy_xhat);
    e[c] = static_cast<T>(-kk * sum_dy[c] + kk * invstd * sum_dy_xhat * mean);
  }
  if (!din) return;
  const std::vector<T> a_k = repeat(a.data(), C, k), b_k = repeat(b.data(), C, k), e_k = repeat(e.data(), C, k);
  for_row_blocks(M, C, pool, [&](std::int64_t r0, std::int64_t r1, std::int64_t, std::int64_t) {
    grad_input(din, dout, relu_out, in, a_k.data(), b_k.data(), e_k.data(), C, k, r0, r1);
  });
}

#define TB_INSTANTIATE(T)                                                                                           \
  template void forward_train_rows<T>(T*, T*, T*, const T*, const T*, const T*, T*, T*, std::int64_t, int, T, T,   \
                                      ThreadPool*);                                                                 \
  template void forward_eval_rows<T>(T*, const T*, const T*, const T*, const T*, const T*, std::int64_t, int, T,    \
                                     ThreadPool*);                                                                  \
  template void backward_rows<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*, std::int64_t, int,    \
                                 ThreadPool*, const T*);
TB_INSTANTIATE(float)
TB_INSTANTIATE(double)
#undef TB_INSTANTIATE

}  // namespace tb
