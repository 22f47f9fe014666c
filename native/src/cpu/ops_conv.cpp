// conv2d as im2col + GEMM over chunks of the batch, so one large GEMM per
// chunk keeps all threads busy even on 9x9 boards with few channels.
#include <algorithm>
#include <cstring>

#include "core/threads.h"
#include "cpu/gemm.h"
#include "cpu/ops.h"

namespace tb {
namespace {

// Upper bound on the im2col buffer, in elements, so memory stays bounded at large batches.
constexpr std::int64_t kColBudget = std::int64_t(1) << 23;

int chunk_samples(const ConvGeom& g) {
  const std::int64_t per_sample = static_cast<std::int64_t>(g.C) * g.KH * g.KW * g.OH() * g.OW();
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(g.N, kColBudget / std::max<std::int64_t>(1, per_sample))));
}

// Output columns [lo, hi) whose input column ow*stride - pad + k lies inside [0, W).
inline void valid_range(int k, int stride, int pad, int in_size, int out_size, int* lo, int* hi) {
  // first ow with ow*stride >= pad - k, last with ow*stride <= in_size - 1 + pad - k
  const int a = pad - k, b = in_size - 1 + pad - k;
  *lo = a <= 0 ? 0 : (a + stride - 1) / stride;
  *hi = b < 0 ? 0 : std::min(out_size, b / stride + 1);
  if (*hi < *lo) *hi = *lo;
}

// col (C*KH*KW, nb*OH*OW) from in samples [n0, n0+nb)
template <typename T>
void im2col(T* col, const T* in, const ConvGeom& g, int n0, int nb, ThreadPool* pool) {
  const int OH = g.OH(), OW = g.OW();
  const std::int64_t ohw = static_cast<std::int64_t>(OH) * OW, cols = nb * ohw;
  const int rows = g.C * g.KH * g.KW;
  auto body = [&](std::int64_t rb, std::int64_t re, int) {
    for (std::int64_t r = rb; r < re; ++r) {
      const int c = static_cast<int>(r / (g.KH * g.KW)), kh = static_cast<int>(r / g.KW % g.KH), kw = static_cast<int>(r % g.KW);
      int lo, hi;
      valid_range(kw, g.stride, g.pad, g.W, OW, &lo, &hi);
      T* dst = col + r * cols;
      for (int n = 0; n < nb; ++n) {
        const T* src = in + (static_cast<std::int64_t>(n0 + n) * g.C + c) * g.H * g.W;
        for (int oh = 0; oh < OH; ++oh) {
          const int ih = oh * g.stride - g.pad + kh;
          T* d = dst + n * ohw + static_cast<std::int64_t>(oh) * OW;
          if (ih < 0 || ih >= g.H) {
            std::fill(d, d + OW, T(0));
            continue;
          }
          std::fill(d, d + lo, T(0));
          std::fill(d + hi, d + OW, T(0));
          const T* s = src + static_cast<std::int64_t>(ih) * g.W - g.pad + kw;
          if (g.stride == 1) {
            std::copy(s + lo, s + hi, d + lo);
          } else {
            for (int ow = lo; ow < hi; ++ow) d[ow] = s[ow * g.stride];
          }
        }
      }
    }
  };
  if (pool) pool->parallel_for(rows, body, 4);
  else body(0, rows, 0);
}

// din samples [n0, n0+nb) = scatter-add of col; parallel over channels so no two threads share an output.
template <typename T>
void col2im(T* din, const T* col, const ConvGeom& g, int n0, int nb, ThreadPool* pool) {
  const int OH = g.OH(), OW = g.OW();
  const std::int64_t ohw = static_cast<std::int64_t>(OH) * OW, cols = nb * ohw;
  auto body = [&](std::int64_t cb, std::int64_t ce, int) {
    for (std::int64_t c = cb; c < ce; ++c) {
      for (int n = 0; n < nb; ++n) {
        T* dst = din + (static_cast<std::int64_t>(n0 + n) * g.C + c) * g.H * g.W;
        std::fill(dst, dst + static_cast<std::int64_t>(g.H) * g.W, T(0));
        for (int kh = 0; kh < g.KH; ++kh)
          for (int kw = 0; kw < g.KW; ++kw) {
            const T* src = col + ((c * g.KH + kh) * g.KW + kw) * cols + n * ohw;
            int lo, hi;
            valid_range(kw, g.stride, g.pad, g.W, OW, &lo, &hi);
            for (int oh = 0; oh < OH; ++oh) {
              const int ih = oh * g.stride - g.pad + kh;
              if (ih < 0 || ih >= g.H) continue;
              T* d = dst + static_cast<std::int64_t>(ih) * g.W - g.pad + kw;
              const T* s = src + static_cast<std::int64_t>(oh) * OW;
              for (int ow = lo; ow < hi; ++ow) d[ow * g.stride] += s[ow];
            }
          }
      }
    }
  };
  if (pool) pool->parallel_for(g.C, body, 1);
  else body(0, g.C, 0);
}

}  // namespace

template <typename T>
void conv2d_forward(T* out, const T* in, const T* weight, const T* bias, const ConvGeom& g, ConvWorkspace<T>& ws,
                    ThreadPool* pool) {
  const int OH = g.OH(), OW = g.OW(), K = g.C * g.KH * g.KW;
  const std::int64_t ohw = static_cast<std::int64_t>(OH) * OW;
  const int chunk = chunk_samples(g);
  ws.col.resize(static_cast<size_t>(K) * chunk * ohw);
  ws.tmp.resize(static_cast<size_t>(g.O) * chunk * ohw);
  for (int n0 = 0; n0 < g.N; n0 += chunk) {
    const int nb = std::min(chunk, g.N - n0);
    const int cols = static_cast<int>(nb * ohw);
    im2col(ws.col.data(), in, g, n0, nb, pool);
    // tmp (O, nb*OHW) = weight (O, K) . col (K, nb*OHW)
    gemm(false, false, g.O, cols, K, T(1), weight, K, ws.col.data(), cols, T(0), ws.tmp.data(), cols, pool);
    ws.col_holds_batch = nb == g.N;
    for (int n = 0; n < nb; ++n)
      for (int o = 0; o < g.O; ++o) {
        const T* s = ws.tmp.data() + static_cast<std::int64_t>(o) * cols + n * ohw;
        T* d = out + (static_cast<std::int64_t>(n0 + n) * g.O + o) * ohw;
        const T b = bias ? bias[o] : T(0);
        for (std::int64_t p = 0; p < ohw; ++p) d[p] = s[p] + b;
      }
  }
}

template <typename T>
void conv2d_backward(T* din, T* dweight, T* dbias, const T* dout, const T* in, const T* weight, const ConvGeom& g,
                     ConvWorkspace<T>& ws, ThreadPool* pool, bool reuse_col) {
  const bool cached = reuse_col && ws.col_holds_batch;
  ws.col_holds_batch = false;  // the buffer is reused for dcol below
  const int OH = g.OH(), OW = g.OW(), K = g.C * g.KH * g.KW;
  const std::int64_t ohw = static_cast<std::int64_t>(OH) * OW;
  const int chunk = chunk_samples(g);
  if (!cached) ws.col.resize(static_cast<size_t>(K) * chunk * ohw);
  ws.tmp.resize(static_cast<size_t>(g.O) * chunk * ohw);
  for (int n0 = 0; n0 < g.N; n0 += chunk) {
    const int nb = std::min(chunk, g.N - n0);
    const int cols = static_cast<int>(nb * ohw);
    // dtmp (O, nb*OHW) gathered from dout (nb, O, OHW)
    for (int n = 0; n < nb; ++n)
      for (int o = 0; o < g.O; ++o) {
        const T* s = dout + (static_cast<std::int64_t>(n0 + n) * g.O + o) * ohw;
        std::memcpy(ws.tmp.data() + static_cast<std::int64_t>(o) * cols + n * ohw, s, sizeof(T) * ohw);
      }
    if (dbias)
      for (int o = 0; o < g.O; ++o) {
        const T* s = ws.tmp.data() + static_cast<std::int64_t>(o) * cols;
        T acc = 0;
        for (int p = 0; p < cols; ++p) acc += s[p];
        dbias[o] += acc;
      }
    if (!cached) im2col(ws.col.data(), in, g, n0, nb, pool);
    // dweight (O, K) += dtmp (O, cols) . col^T (cols, K)
    gemm(false, true, g.O, K, cols, T(1), ws.tmp.data(), cols, ws.col.data(), cols, T(1), dweight, K, pool);
    if (din) {
      // dcol (K, cols) = weight^T (K, O) . dtmp (O, cols), reusing the col buffer
      gemm(true, false, K, cols, g.O, T(1), weight, K, ws.tmp.data(), cols, T(0), ws.col.data(), cols, pool);
      col2im(din, ws.col.data(), g, n0, nb, pool);
    }
  }
}

template void conv2d_forward<float>(float*, const float*, const float*, const float*, const ConvGeom&,
                                    ConvWorkspace<float>&, ThreadPool*);
template void conv2d_forward<double>(double*, const double*, const double*, const double*, const ConvGeom&,
                                     ConvWorkspace<double>&, ThreadPool*);
template void conv2d_backward<float>(float*, float*, float*, const float*, const float*, const float*, const ConvGeom&,
                                     ConvWorkspace<float>&, ThreadPool*, bool);
template void conv2d_backward<double>(double*, double*, double*, const double*, const double*, const double*,
                                      const ConvGeom&, ConvWorkspace<double>&, ThreadPool*, bool);

}  // namespace tb
