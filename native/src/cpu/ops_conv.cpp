// conv2d on channel-major activations (C, N, H, W): each activation is a
// (channels, batch * pixels) matrix, so a convolution is one GEMM
// out (O, N*OHW) = weight (O, K) . col (K, N*OHW) written straight into the
// output, and a 1x1 stride-1 convolution needs no im2col at all (col is the
// input). Other shapes build im2col over chunks of the batch (bounded memory),
// each chunk one GEMM wide enough to keep all threads busy on 9x9 boards.
#include <algorithm>
#include <cstring>

#include "core/threads.h"
#include "cpu/gemm.h"
#include "cpu/ops.h"

namespace tb {
namespace {

// Upper bound on the im2col buffer, in elements, so memory stays bounded at large batches.
constexpr std::int64_t kColBudget = std::int64_t(1) << 23;

}  // namespace

int conv_chunk_samples(const ConvGeom& g) {
  const std::int64_t per_sample = static_cast<std::int64_t>(g.C) * g.KH * g.KW * g.OH() * g.OW();
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(g.N, kColBudget / std::max<std::int64_t>(1, per_sample))));
}

namespace {

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
        const T* src = in + (static_cast<std::int64_t>(c) * g.N + n0 + n) * g.H * g.W;
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

// din samples [n0, n0+nb) = (or +=, with add) scatter-add of col; parallel over channels so no two threads share an output.
template <typename T>
void col2im(T* din, const T* col, const ConvGeom& g, int n0, int nb, ThreadPool* pool, bool add) {
  const int OH = g.OH(), OW = g.OW();
  const std::int64_t ohw = static_cast<std::int64_t>(OH) * OW, cols = nb * ohw;
  auto body = [&](std::int64_t cb, std::int64_t ce, int) {
    for (std::int64_t c = cb; c < ce; ++c) {
      for (int n = 0; n < nb; ++n) {
        T* dst = din + (static_cast<std::int64_t>(c) * g.N + n0 + n) * g.H * g.W;
        if (!add) std::fill(dst, dst + static_cast<std::int64_t>(g.H) * g.W, T(0));
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

// The dense form: every (output pixel po, input pixel pi) pair whose offset is a kernel tap is one
// (O, C) block of a weight matrix wd (OHW*O, HW*C); the rest of wd is zero. With fewer input pixels
// than taps it has fewer multiplies than im2col (on a 2x2 board a 3x3 kernel's im2col is 5/9 zero
// padding, the dense form 16 of 36 blocks). Workspace, in order: x (HW*C, N) the input gathered
// pixel-major, wd, dwd (its gradient), y (OHW*O, N) the output (or its gradient) before scattering.
template <typename T>
struct Dense {
  std::int64_t K, M;  // HW*C and OHW*O
  T *x, *wd, *dwd, *y;
  Dense(const ConvGeom& g, std::vector<T>& ws) {
    K = static_cast<std::int64_t>(g.H) * g.W * g.C;
    M = static_cast<std::int64_t>(g.OH()) * g.OW() * g.O;
    ws.resize(static_cast<size_t>(conv_dense_floats(g)));
    x = ws.data();
    wd = x + K * g.N;
    dwd = wd + M * K;
    y = dwd + M * K;
  }
};

// Calls f(po, pi, kh, kw) for every output/input pixel pair that a kernel tap connects.
template <typename F>
void dense_taps(const ConvGeom& g, F&& f) {
  for (int oh = 0; oh < g.OH(); ++oh)
    for (int ow = 0; ow < g.OW(); ++ow)
      for (int ih = 0; ih < g.H; ++ih)
        for (int iw = 0; iw < g.W; ++iw) {
          const int kh = ih - oh * g.stride + g.pad, kw = iw - ow * g.stride + g.pad;
          if (kh >= 0 && kh < g.KH && kw >= 0 && kw < g.KW) f(oh * g.OW() + ow, ih * g.W + iw, kh, kw);
        }
}

template <typename T>
void dense_prepare(Dense<T>& d, const T* in, const T* weight, const ConvGeom& g) {
  const int HW = g.H * g.W;
  for (int pi = 0; pi < HW; ++pi)
    for (int c = 0; c < g.C; ++c) {
      T* dst = d.x + (static_cast<std::int64_t>(pi) * g.C + c) * g.N;
      const T* src = in + static_cast<std::int64_t>(c) * g.N * HW + pi;
      for (int n = 0; n < g.N; ++n) dst[n] = src[static_cast<std::int64_t>(n) * HW];
    }
  std::fill(d.wd, d.wd + d.M * d.K, T(0));
  dense_taps(g, [&](int po, int pi, int kh, int kw) {
    for (int o = 0; o < g.O; ++o) {
      T* row = d.wd + (static_cast<std::int64_t>(po) * g.O + o) * d.K + static_cast<std::int64_t>(pi) * g.C;
      for (int c = 0; c < g.C; ++c) row[c] = weight[((static_cast<std::int64_t>(o) * g.C + c) * g.KH + kh) * g.KW + kw];
    }
  });
}

}  // namespace

std::int64_t conv_dense_floats(const ConvGeom& g) {
  const std::int64_t K = static_cast<std::int64_t>(g.H) * g.W * g.C, M = static_cast<std::int64_t>(g.OH()) * g.OW() * g.O;
  return K * g.N + 2 * M * K + M * g.N;
}

namespace {

template <typename T>
void dense_forward(T* out, const T* in, const T* weight, const T* bias, const ConvGeom& g, ConvWorkspace<T>& ws,
                   ThreadPool* pool) {
  Dense<T> d(g, ws.col);
  dense_prepare(d, in, weight, g);
  gemm(false, false, static_cast<int>(d.M), g.N, static_cast<int>(d.K), T(1), d.wd, static_cast<int>(d.K), d.x, g.N,
       T(0), d.y, g.N, pool);
  const int OHW = g.OH() * g.OW();
  for (int po = 0; po < OHW; ++po)
    for (int o = 0; o < g.O; ++o) {
      const T* src = d.y + (static_cast<std::int64_t>(po) * g.O + o) * g.N;
      T* dst = out + static_cast<std::int64_t>(o) * g.N * OHW + po;
      const T b = bias ? bias[o] : T(0);
      for (int n = 0; n < g.N; ++n) dst[static_cast<std::int64_t>(n) * OHW] = src[n] + b;
    }
  ws.col_holds_batch = true;
}

template <typename T>
void dense_backward(T* din, T* dweight, const T* dout, const T* in, const T* weight, const ConvGeom& g,
                    ConvWorkspace<T>& ws, ThreadPool* pool, bool cached, bool add_din) {
  Dense<T> d(g, ws.col);
  if (!cached) dense_prepare(d, in, weight, g);
  const int OHW = g.OH() * g.OW(), HW = g.H * g.W;
  for (int po = 0; po < OHW; ++po)
    for (int o = 0; o < g.O; ++o) {
      T* dst = d.y + (static_cast<std::int64_t>(po) * g.O + o) * g.N;
      const T* src = dout + static_cast<std::int64_t>(o) * g.N * OHW + po;
      for (int n = 0; n < g.N; ++n) dst[n] = src[static_cast<std::int64_t>(n) * OHW];
    }
  const int M = static_cast<int>(d.M), K = static_cast<int>(d.K);
  // dwd (M, K) = dy (M, N) . x^T, then each block added to the tap it came from (a fixed order).
  gemm(false, true, M, K, g.N, T(1), d.y, g.N, d.x, g.N, T(0), d.dwd, K, pool);
  dense_taps(g, [&](int po, int pi, int kh, int kw) {
    for (int o = 0; o < g.O; ++o) {
      const T* row = d.dwd + (static_cast<std::int64_t>(po) * g.O + o) * K + static_cast<std::int64_t>(pi) * g.C;
      for (int c = 0; c < g.C; ++c) dweight[((static_cast<std::int64_t>(o) * g.C + c) * g.KH + kh) * g.KW + kw] += row[c];
    }
  });
  if (!din) return;
  // dx (K, N) = wd^T (K, M) . dy (M, N), into x's place (x is no longer needed), then scattered back.
  gemm(true, false, K, g.N, M, T(1), d.wd, K, d.y, g.N, T(0), d.x, g.N, pool);
  for (int pi = 0; pi < HW; ++pi)
    for (int c = 0; c < g.C; ++c) {
      const T* src = d.x + (static_cast<std::int64_t>(pi) * g.C + c) * g.N;
      T* dst = din + static_cast<std::int64_t>(c) * g.N * HW + pi;
      if (add_din)
        for (int n = 0; n < g.N; ++n) dst[static_cast<std::int64_t>(n) * HW] += src[n];
      else
        for (int n = 0; n < g.N; ++n) dst[static_cast<std::int64_t>(n) * HW] = src[n];
    }
}

}  // namespace

template <typename T>
void conv2d_forward(T* out, const T* in, const T* weight, const T* bias, const ConvGeom& g, ConvWorkspace<T>& ws,
                    ThreadPool* pool) {
  const int K = g.C * g.KH * g.KW;
  const std::int64_t ohw = static_cast<std::int64_t>(g.OH()) * g.OW();
  const int P = static_cast<int>(g.N * ohw);
  ws.col_holds_batch = false;
  if (conv_is_dense(g)) {
    dense_forward(out, in, weight, bias, g, ws, pool);
    return;
  }
  if (conv_is_pointwise(g)) {
    gemm(false, false, g.O, P, g.C, T(1), weight, g.C, in, P, T(0), out, P, pool);
  } else {
    const int chunk = conv_chunk_samples(g);
    ws.col.resize(static_cast<size_t>(K) * chunk * ohw);
    for (int n0 = 0; n0 < g.N; n0 += chunk) {
      const int nb = std::min(chunk, g.N - n0);
      const int cols = static_cast<int>(nb * ohw);
      im2col(ws.col.data(), in, g, n0, nb, pool);
      // out[:, n0*OHW : +cols] (O, cols) = weight (O, K) . col (K, cols)
      gemm(false, false, g.O, cols, K, T(1), weight, K, ws.col.data(), cols, T(0), out + n0 * ohw, P, pool);
      ws.col_holds_batch = nb == g.N;
    }
  }
  if (bias)
    for (int o = 0; o < g.O; ++o) {
      T* d = out + static_cast<std::int64_t>(o) * P;
      for (int p = 0; p < P; ++p) d[p] += bias[o];
    }
}

template <typename T>
void conv2d_backward(T* din, T* dweight, T* dbias, const T* dout, const T* in, const T* weight, const ConvGeom& g,
                     ConvWorkspace<T>& ws, ThreadPool* pool, bool reuse_col, bool add_din) {
  const bool cached = reuse_col && ws.col_holds_batch;
  ws.col_holds_batch = false;  // the buffer is reused for dcol below
  const int K = g.C * g.KH * g.KW;
  const std::int64_t ohw = static_cast<std::int64_t>(g.OH()) * g.OW();
  const int P = static_cast<int>(g.N * ohw);
  if (dbias)
    for (int o = 0; o < g.O; ++o) {
      const T* s = dout + static_cast<std::int64_t>(o) * P;
      T acc = 0;
      for (int p = 0; p < P; ++p) acc += s[p];
      dbias[o] += acc;
    }
  if (conv_is_dense(g)) {
    dense_backward(din, dweight, dout, in, weight, g, ws, pool, cached, add_din);
    return;
  }
  if (conv_is_pointwise(g)) {
    // dweight (O, C) += dout (O, P) . in^T (P, C);  din (C, P) = weight^T (C, O) . dout (O, P)
    gemm(false, true, g.O, g.C, P, T(1), dout, P, in, P, T(1), dweight, g.C, pool);
    if (din) gemm(true, false, g.C, P, g.O, T(1), weight, g.C, dout, P, add_din ? T(1) : T(0), din, P, pool);
    return;
  }
  const int chunk = conv_chunk_samples(g);
  if (!cached) ws.col.resize(static_cast<size_t>(K) * chunk * ohw);
  for (int n0 = 0; n0 < g.N; n0 += chunk) {
    const int nb = std::min(chunk, g.N - n0);
    const int cols = static_cast<int>(nb * ohw);
    const T* dchunk = dout + n0 * ohw;  // (O, cols) with row stride P
    if (!cached) im2col(ws.col.data(), in, g, n0, nb, pool);
    // dweight (O, K) += dout (O, cols) . col^T (cols, K)
    gemm(false, true, g.O, K, cols, T(1), dchunk, P, ws.col.data(), cols, T(1), dweight, K, pool);
    if (din) {
      // dcol (K, cols) = weight^T (K, O) . dout (O, cols), reusing the col buffer
      gemm(true, false, K, cols, g.O, T(1), weight, K, dchunk, P, T(0), ws.col.data(), cols, pool);
      col2im(din, ws.col.data(), g, n0, nb, pool, add_din);
    }
  }
}

template void conv2d_forward<float>(float*, const float*, const float*, const float*, const ConvGeom&,
                                    ConvWorkspace<float>&, ThreadPool*);
template void conv2d_forward<double>(double*, const double*, const double*, const double*, const ConvGeom&,
                                     ConvWorkspace<double>&, ThreadPool*);
template void conv2d_backward<float>(float*, float*, float*, const float*, const float*, const float*, const ConvGeom&,
                                     ConvWorkspace<float>&, ThreadPool*, bool, bool);
template void conv2d_backward<double>(double*, double*, double*, const double*, const double*, const double*,
                                      const ConvGeom&, ConvWorkspace<double>&, ThreadPool*, bool, bool);

}  // namespace tb
