// The channels-last convolution's forward and input gradient (cpu/conv_rows.h): tiles of MR samples
// at one pixel position, each tap a row pointer into the input (or dout), only the taps inside the
// image, summed by the indirect GEMM kernel (cpu/conv_kernel.inc) chosen for this CPU.
#include "cpu/conv_rows.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/threads.h"
#include "cpu/gemm.h"

namespace tb {
namespace gemm_detail {
void igemm_generic(int, int, const float* const*, const float*, const int*, float* const*, int, int, bool);
void dwk_generic(int, const float*, std::int64_t, const float* const*, int, float*, int, int, int);
#if defined(TB_HAVE_X86_KERNELS)
void igemm_avx2(int, int, const float* const*, const float*, const int*, float* const*, int, int, bool);
void igemm_avx512(int, int, const float* const*, const float*, const int*, float* const*, int, int, bool);
void dwk_avx2(int, const float*, std::int64_t, const float* const*, int, float*, int, int, int);
void dwk_avx512(int, const float*, std::int64_t, const float* const*, int, float*, int, int, int);
#endif
}  // namespace gemm_detail

namespace conv_detail {

const FloatKernels& float_kernels() {
  static const FloatKernels k = [] {
#if defined(TB_HAVE_X86_KERNELS)
    const std::string name = gemm_kernel_name();  // the GEMM's choice from the CPU's features
    if (name == "avx512") return FloatKernels{gemm_detail::igemm_avx512, gemm_detail::dwk_avx512, 32};
    if (name == "avx2") return FloatKernels{gemm_detail::igemm_avx2, gemm_detail::dwk_avx2, 16};
#endif
    return FloatKernels{gemm_detail::igemm_generic, gemm_detail::dwk_generic, 16};
  }();
  return k;
}


std::vector<std::int64_t> tap_offsets(const ConvGeom& g) {
  const int OH = g.OH(), OW = g.OW(), taps = g.KH * g.KW;
  std::vector<std::int64_t> offs(static_cast<size_t>(OH) * OW * taps);
  for (int oh = 0; oh < OH; ++oh)
    for (int ow = 0; ow < OW; ++ow)
      for (int kh = 0; kh < g.KH; ++kh)
        for (int kw = 0; kw < g.KW; ++kw) {
          const int ih = oh * g.stride - g.pad + kh, iw = ow * g.stride - g.pad + kw;
          const bool inside = ih >= 0 && ih < g.H && iw >= 0 && iw < g.W;
          offs[(static_cast<size_t>(oh) * OW + ow) * taps + kh * g.KW + kw] =
              inside ? (static_cast<std::int64_t>(ih) * g.W + iw) * g.C : -1;
        }
  return offs;
}

PositionTaps forward_taps(const ConvGeom& g) {
  PositionTaps pt;
  const std::vector<std::int64_t> all = tap_offsets(g);
  const int taps = g.KH * g.KW, positions = g.OH() * g.OW();
  pt.start.push_back(0);
  for (int r = 0; r < positions; ++r) {
    for (int t = 0; t < taps; ++t)
      if (all[static_cast<size_t>(r) * taps + t] >= 0) {
        pt.ids.push_back(t);
        pt.offs.push_back(all[static_cast<size_t>(r) * taps + t]);
      }
    pt.start.push_back(static_cast<int>(pt.ids.size()));
  }
  return pt;
}

PositionTaps input_taps(const ConvGeom& g) {
  PositionTaps pt;
  const int OH = g.OH(), OW = g.OW(), s = g.stride;
  pt.start.push_back(0);
  for (int qh = 0; qh < g.H; ++qh)
    for (int qw = 0; qw < g.W; ++qw) {
      for (int kh = 0; kh < g.KH; ++kh)
        for (int kw = 0; kw < g.KW; ++kw) {
          const int dh = qh + g.pad - kh, dw = qw + g.pad - kw;
          if (dh < 0 || dw < 0 || dh % s != 0 || dw % s != 0 || dh / s >= OH || dw / s >= OW) continue;
          pt.ids.push_back(kh * g.KW + kw);
          pt.offs.push_back((static_cast<std::int64_t>(dh / s) * OW + dw / s) * g.O);
        }
      pt.start.push_back(static_cast<int>(pt.ids.size()));
    }
  return pt;
}

// out rows (N*OH*OW, O) from in rows (N*H*W, C). Tiles are (MR samples, one output position),
// positions inner, so consecutive tiles share their samples' rows in cache.
template <typename T>
void rows_forward(T* out, const T* in, const T* weight, const ConvGeom& g, T* ws, ThreadPool* pool) {
  const int nr = Kernels<T>::nr(), taps = g.KH * g.KW, OHW = g.OH() * g.OW();
  const Layout L(g, nr);
  T* b = ws + L.zeros;
  const int panels = pack_weights(b, weight, g, nr, true);
  const bool gather = gathers_forward(g);
  const int KT = taps * g.C;
  // The gathered rows keep every tap (zeros in the padding); otherwise only in-image taps are run.
  const std::vector<std::int64_t> offs = gather ? tap_offsets(g) : std::vector<std::int64_t>();
  const PositionTaps pt = forward_taps(g);
  const std::int64_t sample = static_cast<std::int64_t>(g.H) * g.W * g.C;
  const std::int64_t groups = (g.N + MR - 1) / MR, tiles = groups * OHW;
  auto body = [&](std::int64_t t0, std::int64_t t1, int) {
    std::vector<const T*> a(static_cast<size_t>(taps) * MR);
    std::vector<T> rows_buf(gather ? static_cast<size_t>(MR) * KT : 0);
    const T* gathered[MR];
    for (int i = 0; i < MR && gather; ++i) gathered[i] = rows_buf.data() + static_cast<std::int64_t>(i) * KT;
    T* crow[MR];
    for (std::int64_t tile = t0; tile < t1; ++tile) {
      const int n0 = static_cast<int>(tile / OHW) * MR, r = static_cast<int>(tile % OHW);
      const int rows = std::min(MR, g.N - n0);
      const int first = pt.start[r], valid = pt.start[r + 1] - first;
      for (int i = 0; i < MR; ++i) {
        const T* base = in + (n0 + (i < rows ? i : 0)) * sample;
        if (gather) {
          const std::int64_t* o = offs.data() + static_cast<std::int64_t>(r) * taps;
          T* row = rows_buf.data() + static_cast<std::int64_t>(i) * KT;
          for (int t = 0; t < taps; ++t)
            for (int c = 0; c < g.C; ++c) row[t * g.C + c] = o[t] >= 0 ? base[o[t] + c] : T(0);
        } else {
          for (int t = 0; t < valid; ++t) a[static_cast<size_t>(t) * MR + i] = base + pt.offs[first + t];
        }
      }
      for (int j = 0; j < panels; ++j) {
        for (int i = 0; i < rows; ++i)
          crow[i] = out + (static_cast<std::int64_t>(n0 + i) * OHW + r) * g.O + static_cast<std::int64_t>(j) * nr;
        // (tap, C, nr) packing is also (1, taps*C, nr): the gathered rows use the same weights.
        const T* bj = b + static_cast<std::int64_t>(j) * taps * g.C * nr;
        if (gather) Kernels<T>::igemm(1, KT, gathered, bj, nullptr, crow, rows, std::min(nr, g.O - j * nr), false);
        else Kernels<T>::igemm(valid, g.C, a.data(), bj, pt.ids.data() + first, crow, rows, std::min(nr, g.O - j * nr), false);
      }
    }
  };
  if (pool) pool->parallel_for(tiles, body, 8);
  else body(0, tiles, 0);
}

// din rows (N*H*W, C) (=, or += with add) from dout rows (N*OH*OW, O): each input pixel sums, over
// the taps that reach it, the output pixel's gradient through that tap's weights. Every sample has
// the same taps at a position (stride phase and image bounds), so tiles are (MR samples, one input
// position) and run only those taps: a stride-2 convolution does no work on the taps that skip a pixel.
template <typename T>
void rows_backward_input(T* din, const T* dout, const T* weight, const ConvGeom& g, T* ws, ThreadPool* pool, bool add) {
  const int nr = Kernels<T>::nr(), taps = g.KH * g.KW, HW = g.H * g.W;
  const Layout L(g, nr);
  T* b = ws + L.zeros;
  const int panels = pack_weights(b, weight, g, nr, false);
  const PositionTaps pt = input_taps(g);
  const std::int64_t sample = static_cast<std::int64_t>(g.OH()) * g.OW() * g.O;
  const std::int64_t groups = (g.N + MR - 1) / MR, tiles = groups * HW;
  auto body = [&](std::int64_t t0, std::int64_t t1, int) {
    std::vector<const T*> a(static_cast<size_t>(taps) * MR);
    T* crow[MR];
    for (std::int64_t tile = t0; tile < t1; ++tile) {
      const int n0 = static_cast<int>(tile / HW) * MR, q = static_cast<int>(tile % HW);
      const int rows = std::min(MR, g.N - n0);
      const int first = pt.start[q], valid = pt.start[q + 1] - first;
      for (int i = 0; i < MR; ++i) {
        const T* base = dout + (n0 + (i < rows ? i : 0)) * sample;
        for (int t = 0; t < valid; ++t) a[static_cast<size_t>(t) * MR + i] = base + pt.offs[first + t];
      }
      for (int j = 0; j < panels; ++j) {
        for (int i = 0; i < rows; ++i)
          crow[i] = din + (static_cast<std::int64_t>(n0 + i) * HW + q) * g.C + static_cast<std::int64_t>(j) * nr;
        // No tap reaches the pixel: the kernel sums nothing and writes (or adds) zeros.
        Kernels<T>::igemm(valid, g.O, a.data(), b + static_cast<std::int64_t>(j) * taps * g.O * nr, pt.ids.data() + first,
                          crow, rows, std::min(nr, g.C - j * nr), add);
      }
    }
  };
  if (pool) pool->parallel_for(tiles, body, 8);
  else body(0, tiles, 0);
}

template void rows_forward<float>(float*, const float*, const float*, const ConvGeom&, float*, ThreadPool*);
template void rows_forward<double>(double*, const double*, const double*, const ConvGeom&, double*, ThreadPool*);
template void rows_backward_input<float>(float*, const float*, const float*, const ConvGeom&, float*, ThreadPool*, bool);
template void rows_backward_input<double>(double*, const double*, const double*, const ConvGeom&, double*, ThreadPool*,
                                          bool);

}  // namespace conv_detail
}  // namespace tb
