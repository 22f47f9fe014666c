#include <algorithm>
#include <vector>

#include "core/rng.h"
#include "core/threads.h"
#include "cpu/ops.h"
#include "cpu/simd_clones.h"

namespace tb {

template <typename T>
void relu_forward(T* out, const T* in, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = in[i] > T(0) ? in[i] : T(0);
}

template <typename T>
void relu_backward(T* din, const T* dout, const T* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) din[i] = out[i] > T(0) ? dout[i] : T(0);
}

template <typename T>
void add_forward(T* out, const T* a, const T* b, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <typename T>
void global_avgpool_forward(T* out, const T* in, int N, int C, int HW) {
  const std::int64_t rows = static_cast<std::int64_t>(N) * C;
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* x = in + r * HW;
    double s = 0;
    for (int i = 0; i < HW; ++i) s += x[i];
    out[r] = static_cast<T>(s / HW);
  }
}

template <typename T>
void global_avgpool_backward(T* din, const T* dout, int N, int C, int HW) {
  const std::int64_t rows = static_cast<std::int64_t>(N) * C;
  for (std::int64_t r = 0; r < rows; ++r) std::fill(din + r * HW, din + (r + 1) * HW, static_cast<T>(dout[r] / HW));
}

template <typename T>
void dropout_forward(T* out, T* mask, const T* in, std::int64_t n, double p, Rng* rng) {
  if (p <= 0.0 || !rng) {
    std::copy(in, in + n, out);
    std::fill(mask, mask + n, T(1));
    return;
  }
  const T keep_scale = static_cast<T>(1.0 / (1.0 - p));
  for (std::int64_t i = 0; i < n; ++i) {
    mask[i] = rng->uniform() < p ? T(0) : keep_scale;
    out[i] = in[i] * mask[i];
  }
}

template <typename T>
void dropout_backward(T* din, const T* dout, const T* mask, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) din[i] = dout[i] * mask[i];
}

#define TB_INSTANTIATE(T)                                                            \
  template void relu_forward<T>(T*, const T*, std::int64_t);                          \
  template void relu_backward<T>(T*, const T*, const T*, std::int64_t);               \
  template void add_forward<T>(T*, const T*, const T*, std::int64_t);                 \
  template void global_avgpool_forward<T>(T*, const T*, int, int, int);               \
  template void global_avgpool_backward<T>(T*, const T*, int, int, int);              \
  template void dropout_forward<T>(T*, T*, const T*, std::int64_t, double, Rng*);      \
  template void dropout_backward<T>(T*, const T*, const T*, std::int64_t);
TB_INSTANTIATE(float)
TB_INSTANTIATE(double)
#undef TB_INSTANTIATE

}  // namespace tb

namespace tb {

void global_avgpool_nhwc_forward(float* out, const float* in, int N, int C, int HW) {
  std::vector<double> s(static_cast<size_t>(C));
  for (int n = 0; n < N; ++n) {
    std::fill(s.begin(), s.end(), 0.0);
    for (int i = 0; i < HW; ++i) {
      const float* x = in + (static_cast<std::int64_t>(n) * HW + i) * C;
      for (int c = 0; c < C; ++c) s[c] += x[c];
    }
    for (int c = 0; c < C; ++c) out[static_cast<std::int64_t>(n) * C + c] = static_cast<float>(s[c] / HW);
  }
}

void global_avgpool_nhwc_backward(float* din, const float* dout, int N, int C, int HW) {
  for (int n = 0; n < N; ++n)
    for (int i = 0; i < HW; ++i) {
      float* d = din + (static_cast<std::int64_t>(n) * HW + i) * C;
      const float* g = dout + static_cast<std::int64_t>(n) * C;
      for (int c = 0; c < C; ++c) d[c] = g[c] / HW;
    }
}

void to_channels_last(float* out, const float* in, int N, int C, int HW, ThreadPool* pool) {
  auto body = [&](std::int64_t n0, std::int64_t n1, int) {
    for (std::int64_t n = n0; n < n1; ++n) {
      const float* src = in + n * C * HW;
      float* dst = out + n * C * HW;
      for (int c = 0; c < C; ++c)
        for (int i = 0; i < HW; ++i) dst[static_cast<std::int64_t>(i) * C + c] = src[static_cast<std::int64_t>(c) * HW + i];
    }
  };
  // The board's input (104 planes of 9x9) is 2M values a batch: worth both cores.
  if (pool && static_cast<std::int64_t>(N) * C * HW >= (1 << 18)) pool->parallel_for(N, body, 1);
  else body(0, N, 0);
}

void to_channels_first(float* out, const float* in, int N, int C, int HW) {
  for (int n = 0; n < N; ++n) {
    const float* src = in + static_cast<std::int64_t>(n) * C * HW;
    float* dst = out + static_cast<std::int64_t>(n) * C * HW;
    for (int c = 0; c < C; ++c)
      for (int i = 0; i < HW; ++i) dst[static_cast<std::int64_t>(c) * HW + i] = src[static_cast<std::int64_t>(i) * C + c];
  }
}

}  // namespace tb

namespace tb {
namespace {

// Elementwise passes over large activations are memory-bound: both cores stream halves. Small ones
// stay on one thread: waking the pool costs more than the pass (the MLP's 64K-value activations ran
// 0.74x with a 32K-value threshold on a loaded machine).
template <typename F>
void split(std::int64_t n, ThreadPool* pool, F&& f) {
  auto body = [&](std::int64_t b, std::int64_t e, int) { f(b, e); };
  if (pool) pool->parallel_for(n, body, 1 << 19);
  else body(0, n, 0);
}

// The training path's chunks, with AVX-512 and AVX2 clones (cpu/simd_clones.h).
TB_SIMD_CLONES void relu_forward_chunk(float* out, const float* in, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}
TB_SIMD_CLONES void relu_backward_chunk(float* din, const float* dout, const float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) din[i] = out[i] > 0.0f ? dout[i] : 0.0f;
}
TB_SIMD_CLONES void add_chunk(float* out, const float* a, const float* b, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

}  // namespace

void relu_forward(float* out, const float* in, std::int64_t n, ThreadPool* pool) {
  split(n, pool, [&](std::int64_t b, std::int64_t e) { relu_forward_chunk(out + b, in + b, e - b); });
}

void relu_backward(float* din, const float* dout, const float* out, std::int64_t n, ThreadPool* pool) {
  split(n, pool, [&](std::int64_t b, std::int64_t e) { relu_backward_chunk(din + b, dout + b, out + b, e - b); });
}

void add_forward(float* out, const float* a, const float* b, std::int64_t n, ThreadPool* pool) {
  split(n, pool, [&](std::int64_t lo, std::int64_t hi) { add_chunk(out + lo, a + lo, b + lo, hi - lo); });
}

void add_into(float* acc, const float* x, std::int64_t n, ThreadPool* pool) {
  split(n, pool, [&](std::int64_t b, std::int64_t e) { add_chunk(acc + b, acc + b, x + b, e - b); });
}

void copy_values(float* out, const float* in, std::int64_t n, ThreadPool* pool) {
  split(n, pool, [&](std::int64_t b, std::int64_t e) { std::copy(in + b, in + e, out + b); });
}

}  // namespace tb
