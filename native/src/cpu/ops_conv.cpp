// conv2d on channels-last activations: a tensor is a row-major (N*H*W, C) matrix, one row per
// pixel, so a kernel tap's input is a pointer to a pixel's C contiguous values. Nothing is
// unfolded (no im2col): the indirect GEMM kernel (cpu/conv_kernel.inc) takes, for a tile of MR
// output pixels, one row pointer per pixel and tap (a row of zeros where the tap falls in the
// padding) and sums over taps and channels with the weights packed per call. The input gradient
// is the same kernel run from the input pixels' side (only the taps that reach each pixel, so a
// stride-2 convolution does no work on the taps that skip one); the weight gradient is an
// outer-product kernel over blocks of pixels, each of its tiles owned by one thread, so the result
// does not depend on the thread count. Those drivers: cpu/conv_rows.cpp, cpu/conv_weight_grad.cpp
// (internals shared in cpu/conv_rows.h). Convolutions on fewer pixels than taps (the heads' 3x3 on
// 2x2) run here as a dense layer: a sample's rows already are its (H*W*C) features.
#include <algorithm>
#include <vector>

#include "core/threads.h"
#include "cpu/conv_rows.h"
#include "cpu/gemm.h"
#include "cpu/ops.h"

namespace tb {
namespace {

using conv_detail::Kernels;
using conv_detail::Layout;
using conv_detail::weight_at;

// The dense form: every (output pixel po, input pixel pi) pair whose offset is a kernel tap is one
// (O, C) block of a weight matrix wd (OHW*O, HW*C); the rest of wd is zero. A sample's rows are its
// (HW*C) features in wd's column order, and its output rows its (OHW*O) outputs, so the convolution
// is out (N, OHW*O) = in (N, HW*C) . wd^T. On a 2x2 board a 3x3 kernel's taps are 5/9 padding; the
// dense form has 16 of 36 blocks, all used. Workspace: wd, then dwd (its gradient).
template <typename T>
struct Dense {
  std::int64_t K, M;  // HW*C and OHW*O
  T *wd, *dwd;
  Dense(const ConvGeom& g, std::vector<T>& ws) {
    K = static_cast<std::int64_t>(g.H) * g.W * g.C;
    M = static_cast<std::int64_t>(g.OH()) * g.OW() * g.O;
    ws.resize(static_cast<size_t>(conv_dense_floats(g)));
    wd = ws.data();
    dwd = wd + M * K;
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
void dense_prepare(Dense<T>& d, const T* weight, const ConvGeom& g) {
  std::fill(d.wd, d.wd + d.M * d.K, T(0));
  dense_taps(g, [&](int po, int pi, int kh, int kw) {
    for (int o = 0; o < g.O; ++o) {
      T* row = d.wd + (static_cast<std::int64_t>(po) * g.O + o) * d.K + static_cast<std::int64_t>(pi) * g.C;
      for (int c = 0; c < g.C; ++c) row[c] = weight_at(weight, g, o, c, kh, kw);
    }
  });
}

}  // namespace

std::int64_t conv_dense_floats(const ConvGeom& g) {
  const std::int64_t K = static_cast<std::int64_t>(g.H) * g.W * g.C, M = static_cast<std::int64_t>(g.OH()) * g.OW() * g.O;
  return 2 * M * K;
}

std::int64_t conv_workspace_floats(const ConvGeom& g) {
  if (conv_is_dense(g)) return conv_dense_floats(g);
  return Layout(g, Kernels<float>::nr()).total();
}

template <typename T>
void conv2d_forward(T* out, const T* in, const T* weight, const T* bias, const ConvGeom& g, ConvWorkspace<T>& ws,
                    ThreadPool* pool) {
  const std::int64_t P = static_cast<std::int64_t>(g.N) * g.OH() * g.OW();
  ws.col_holds_batch = false;
  if (conv_is_dense(g)) {
    Dense<T> d(g, ws.col);
    dense_prepare(d, weight, g);
    gemm(false, true, g.N, static_cast<int>(d.M), static_cast<int>(d.K), T(1), in, static_cast<int>(d.K), d.wd,
         static_cast<int>(d.K), T(0), out, static_cast<int>(d.M), pool);
    ws.col_holds_batch = true;
  } else {
    ws.col.resize(static_cast<size_t>(Layout(g, Kernels<T>::nr()).total()));
    conv_detail::rows_forward(out, in, weight, g, ws.col.data(), pool);
  }
  if (bias)
    for (std::int64_t p = 0; p < P; ++p) {
      T* row = out + p * g.O;
      for (int o = 0; o < g.O; ++o) row[o] += bias[o];
    }
}

template <typename T>
void conv2d_backward(T* din, T* dweight, T* dbias, const T* dout, const T* in, const T* weight, const ConvGeom& g,
                     ConvWorkspace<T>& ws, ThreadPool* pool, bool reuse_col, bool add_din) {
  const bool cached = reuse_col && ws.col_holds_batch;
  ws.col_holds_batch = false;
  const std::int64_t P = static_cast<std::int64_t>(g.N) * g.OH() * g.OW();
  if (dbias) {
    std::vector<double> acc(static_cast<size_t>(g.O), 0.0);
    for (std::int64_t p = 0; p < P; ++p) {
      const T* row = dout + p * g.O;
      for (int o = 0; o < g.O; ++o) acc[o] += row[o];
    }
    for (int o = 0; o < g.O; ++o) dbias[o] += static_cast<T>(acc[o]);
  }
  if (conv_is_dense(g)) {
    Dense<T> d(g, ws.col);
    if (!cached) dense_prepare(d, weight, g);
    const int M = static_cast<int>(d.M), K = static_cast<int>(d.K);
    // dwd (M, K) = dout^T (M, N) . in (N, K), then each block added to the tap it came from (a fixed order).
    gemm(true, false, M, K, g.N, T(1), dout, M, in, K, T(0), d.dwd, K, pool);
    dense_taps(g, [&](int po, int pi, int kh, int kw) {
      for (int o = 0; o < g.O; ++o) {
        const T* row = d.dwd + (static_cast<std::int64_t>(po) * g.O + o) * K + static_cast<std::int64_t>(pi) * g.C;
        for (int c = 0; c < g.C; ++c) dweight[((static_cast<std::int64_t>(o) * g.C + c) * g.KH + kh) * g.KW + kw] += row[c];
      }
    });
    // din (N, K) = dout (N, M) . wd (M, K)
    if (din) gemm(false, false, g.N, K, M, T(1), dout, M, d.wd, K, add_din ? T(1) : T(0), din, K, pool);
    return;
  }
  ws.col.resize(static_cast<size_t>(Layout(g, Kernels<T>::nr()).total()));
  conv_detail::rows_backward_weight(dweight, dout, in, g, ws.col.data(), pool);
  if (din) conv_detail::rows_backward_input(din, dout, weight, g, ws.col.data(), pool, add_din);
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
