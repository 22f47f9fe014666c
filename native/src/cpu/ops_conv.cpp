// conv2d on channels-last activations: a tensor is a row-major (N*H*W, C) matrix, one row per
// pixel, so a kernel tap's input is a pointer to a pixel's C contiguous values. Nothing is
// unfolded (no im2col): the indirect GEMM kernel (cpu/conv_kernel.inc) takes, for a tile of MR
// output pixels, one row pointer per pixel and tap (a row of zeros where the tap falls in the
// padding) and sums over taps and channels with the weights packed per call. The input gradient
// is the same kernel run from the input pixels' side (taps grouped by stride phase, so a stride-2
// convolution does no work on the taps that skip a pixel); the weight gradient is an
// outer-product kernel over blocks of pixels, each of its tiles owned by one thread, so the result
// does not depend on the thread count. Convolutions on fewer pixels than taps (the heads' 3x3 on
// 2x2) run as a dense layer: a sample's rows already are its (H*W*C) features.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/threads.h"
#include "cpu/gemm.h"
#include "cpu/ops.h"

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

namespace {

constexpr int MR = 6;
// Pixels per weight-gradient block: their gradient rows and input rows stay in L2 while every
// (tap, output-channel, input-channel) tile of the block is computed.
constexpr int kPixelBlock = 256;

using IgemmFn = void (*)(int, int, const float* const*, const float*, const int*, float* const*, int, int, bool);
using DwkFn = void (*)(int, const float*, std::int64_t, const float* const*, int, float*, int, int, int);
struct FloatKernels {
  IgemmFn igemm;
  DwkFn dwk;
  int nr;
};

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

// float runs the per-ISA kernels; double (the finite-difference checks) plain loops that read
// only inside rows and columns.
template <typename T>
struct Kernels;
template <>
struct Kernels<float> {
  static int nr() { return float_kernels().nr; }
  static void igemm(int taps, int K, const float* const* a, const float* b, const int* ids, float* const* c, int rows,
                    int cols, bool add) {
    float_kernels().igemm(taps, K, a, b, ids, c, rows, cols, add);
  }
  static void dwk(int P, const float* g, std::int64_t ldg, const float* const* x, int off, float* dw, int ldw, int rows,
                  int cols) {
    float_kernels().dwk(P, g, ldg, x, off, dw, ldw, rows, cols);
  }
};
template <>
struct Kernels<double> {
  static int nr() { return 8; }
  static void igemm(int taps, int K, const double* const* a, const double* b, const int* ids, double* const* c, int rows,
                    int cols, bool add) {
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) {
        double s = 0;
        for (int t = 0; t < taps; ++t)
          for (int k = 0; k < K; ++k)
            s += a[t * MR + i][k] * b[(static_cast<std::int64_t>(ids ? ids[t] : t) * K + k) * nr() + j];
        c[i][j] = add ? c[i][j] + s : s;
      }
  }
  static void dwk(int P, const double* g, std::int64_t ldg, const double* const* x, int off, double* dw, int ldw,
                  int rows, int cols) {
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) {
        double s = 0;
        for (int p = 0; p < P; ++p) s += g[p * ldg + i] * x[p][off + j];
        dw[static_cast<std::int64_t>(i) * ldw + j] += s;
      }
  }
};

std::int64_t round_up(std::int64_t v, std::int64_t m) { return (v + m - 1) / m * m; }

// Batch slices for the weight gradient: 8 (a fixed number, so results do not depend on the thread
// count) when the output has at least 16384 pixels (the board's 9x9 stage at batch 256), else 1,
// summed by tiles (rows_backward_weight).
int weight_grad_slices(const ConvGeom& g) {
  const std::int64_t P = static_cast<std::int64_t>(g.N) * g.OH() * g.OW();
  return P >= 16384 ? static_cast<int>(std::min<std::int64_t>(8, (P + kPixelBlock - 1) / kPixelBlock)) : 1;
}

// Workspace, in values: a row of zeros (the padding taps' input), then the forward's packed
// weights, or the backward's packed transposed weights and the weight gradient's accumulator.
struct Layout {
  std::int64_t zeros, forward, backward;
  Layout(const ConvGeom& g, int nr) {
    const std::int64_t taps = static_cast<std::int64_t>(g.KH) * g.KW;
    zeros = std::max<std::int64_t>(round_up(g.C, nr), g.O);
    forward = round_up(g.O, nr) * taps * g.C;
    backward = round_up(g.C, nr) * taps * g.O + weight_grad_slices(g) * taps * g.O * g.C;
  }
  std::int64_t total() const { return zeros + std::max(forward, backward); }
};

// Few input channels (a first layer on 1-3 planes): a tap's row is too short for the kernels (one
// multiply per pointer in the forward, 1 of 32 lanes used in the weight gradient), so each pixel's
// taps are gathered into one contiguous row of taps*C values first, and the kernels see one tap.
bool gathers_forward(const ConvGeom& g) { return g.KH * g.KW > 1 && g.C < 8; }
template <typename T>
bool gathers_weight(const ConvGeom& g) { return g.KH * g.KW > 1 && g.C < Kernels<T>::nr(); }

template <typename T>
T weight_at(const T* w, const ConvGeom& g, int o, int c, int kh, int kw) {
  return w[((static_cast<std::int64_t>(o) * g.C + c) * g.KH + kh) * g.KW + kw];
}

// For each output pixel of one image and each tap, where the tap's input row starts within the
// sample's rows (in values), or -1 in the padding: (OH*OW, taps), the same for every sample, so
// building a tile's row pointers is a lookup.
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

// For each output pixel position of one image, the taps that fall inside the image and where their
// input rows start within a sample (in values): every sample has the same, so a tile of MR samples at
// one position runs only those taps (on a 3x3 board 40% of a 3x3 kernel's taps are padding).
struct PositionTaps {
  std::vector<int> start, ids;     // position r's taps are ids[start[r] .. start[r+1])
  std::vector<std::int64_t> offs;  // their row offsets, alongside ids
};

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

// The input pixels' side: at input position (qh, qw), the taps whose output pixel reads it (stride
// phase and image bounds), and that output pixel's row offset within a sample of dout.
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
  T* zero = ws;
  std::fill(zero, zero + L.zeros, T(0));
  // packed (panel of nr output channels, tap, input channel, nr)
  T* b = ws + L.zeros;
  const int panels = static_cast<int>((g.O + nr - 1) / nr);
  for (int j = 0; j < panels; ++j)
    for (int t = 0; t < taps; ++t)
      for (int c = 0; c < g.C; ++c) {
        T* dst = b + ((static_cast<std::int64_t>(j) * taps + t) * g.C + c) * nr;
        for (int jj = 0; jj < nr; ++jj) {
          const int o = j * nr + jj;
          dst[jj] = o < g.O ? weight_at(weight, g, o, c, t / g.KW, t % g.KW) : T(0);
        }
      }
  const bool gather = gathers_forward(g);
  const int KT = taps * g.C;
  const std::vector<std::int64_t> offs = tap_offsets(g);  // the gathered rows keep every tap (zeros in the padding)
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
  // packed (panel of nr input channels, tap, output channel, nr)
  T* b = ws + L.zeros;
  const int panels = static_cast<int>((g.C + nr - 1) / nr);
  for (int j = 0; j < panels; ++j)
    for (int t = 0; t < taps; ++t)
      for (int o = 0; o < g.O; ++o) {
        T* dst = b + ((static_cast<std::int64_t>(j) * taps + t) * g.O + o) * nr;
        for (int jj = 0; jj < nr; ++jj) {
          const int c = j * nr + jj;
          dst[jj] = c < g.C ? weight_at(weight, g, o, c, t / g.KW, t % g.KW) : T(0);
        }
      }
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

// dweight (O, C, KH, KW) += sum over output pixels of dout[p] (x) the input row each tap read.
// By tiles: pixel blocks are taken in order; within a block the gradient's tiles (tap, input-channel vector,
// output-channel rows) are spread over the threads, each tile owned by one thread and summed block
// by block into one accumulator, so the result does not depend on the thread count and no
// per-thread partial sums need zeroing and adding (with 8 batch slices those cost as much as the
// products on 3x3 boards, where a slice held 288 pixels).
template <typename T>
void weight_grad_by_tiles(T* dweight, const T* dout, const T* in, const ConvGeom& g, T* ws, ThreadPool* pool) {
  const int nr = Kernels<T>::nr(), taps = g.KH * g.KW, OHW = g.OH() * g.OW();
  const Layout L(g, nr);
  T* zero = ws;
  std::fill(zero, zero + L.zeros, T(0));
  const std::int64_t part = static_cast<std::int64_t>(taps) * g.O * g.C;
  T* dw = ws + L.zeros + round_up(g.C, nr) * taps * g.O;
  std::fill(dw, dw + part, T(0));
  const bool gather = gathers_weight<T>(g);
  const int KT = taps * g.C;
  const bool swapped = gather && KT < nr;
  const std::vector<std::int64_t> offs = tap_offsets(g);
  const std::int64_t sample = static_cast<std::int64_t>(g.H) * g.W * g.C;
  const std::int64_t P = static_cast<std::int64_t>(g.N) * OHW;
  // Row pointers per (tap, pixel of the block), or gathered rows (pixel, tap*C + c) with nr values of
  // slack for the kernel's loads past a row.
  std::vector<const T*> x(static_cast<size_t>(taps) * kPixelBlock);
  std::vector<T> rows_buf(gather ? static_cast<size_t>(kPixelBlock) * KT + nr : 0);
  std::vector<const T*> xg(gather ? kPixelBlock : 0);
  // Tiles, in layout order: gathered (c-vector, o-rows) of dw as (O, taps*C); swapped (k-rows,
  // o-vector) of dw^T (taps*C, O); else (tap, c-vector, o-rows) of dw as (tap, O, C).
  const int kv = (KT + nr - 1) / nr, cv = (g.C + nr - 1) / nr, orows = (g.O + MR - 1) / MR;
  const std::int64_t tiles = swapped ? static_cast<std::int64_t>((KT + MR - 1) / MR) * ((g.O + nr - 1) / nr)
                             : gather ? static_cast<std::int64_t>(kv) * orows
                                      : static_cast<std::int64_t>(taps) * cv * orows;
  for (std::int64_t pb = 0; pb < P; pb += kPixelBlock) {
    const int nb = static_cast<int>(std::min<std::int64_t>(kPixelBlock, P - pb));
    auto prepare = [&](std::int64_t i0, std::int64_t i1, int) {
      for (std::int64_t i = i0; i < i1; ++i) {
        const std::int64_t p = pb + i;
        const T* base = in + p / OHW * sample;
        const std::int64_t* o = offs.data() + p % OHW * taps;
        for (int t = 0; t < taps; ++t) x[static_cast<size_t>(t) * kPixelBlock + i] = o[t] >= 0 ? base + o[t] : zero;
        if (gather) {
          T* row = rows_buf.data() + i * KT;
          for (int t = 0; t < taps; ++t)
            for (int c = 0; c < g.C; ++c) row[t * g.C + c] = o[t] >= 0 ? base[o[t] + c] : T(0);
          xg[i] = swapped ? dout + p * g.O : row;
        }
      }
    };
    auto products = [&](std::int64_t t0, std::int64_t t1, int) {
      for (std::int64_t tile = t0; tile < t1; ++tile) {
        if (swapped) {
          const int k0 = static_cast<int>(tile / ((g.O + nr - 1) / nr)) * MR, o0 = static_cast<int>(tile % ((g.O + nr - 1) / nr)) * nr;
          Kernels<T>::dwk(nb, rows_buf.data() + k0, KT, xg.data(), o0, dw + static_cast<std::int64_t>(k0) * g.O + o0, g.O,
                          std::min(MR, KT - k0), std::min(nr, g.O - o0));
        } else if (gather) {
          const int c0 = static_cast<int>(tile / orows) * nr, o0 = static_cast<int>(tile % orows) * MR;
          Kernels<T>::dwk(nb, dout + pb * g.O + o0, g.O, xg.data(), c0, dw + static_cast<std::int64_t>(o0) * KT + c0, KT,
                          std::min(MR, g.O - o0), std::min(nr, KT - c0));
        } else {
          const int t = static_cast<int>(tile / (cv * orows)), r = static_cast<int>(tile % (cv * orows));
          const int c0 = r / orows * nr, o0 = r % orows * MR;
          Kernels<T>::dwk(nb, dout + pb * g.O + o0, g.O, x.data() + static_cast<size_t>(t) * kPixelBlock, c0,
                          dw + (static_cast<std::int64_t>(t) * g.O + o0) * g.C + c0, g.C, std::min(MR, g.O - o0),
                          std::min(nr, g.C - c0));
        }
      }
    };
    if (pool) {
      pool->parallel_for(nb, prepare, 64);
      pool->parallel_for(tiles, products, 1);
    } else {
      prepare(0, nb, 0);
      products(0, tiles, 0);
    }
  }
  for (int o = 0; o < g.O; ++o)
    for (int c = 0; c < g.C; ++c)
      for (int t = 0; t < taps; ++t) {
        const std::int64_t kt = static_cast<std::int64_t>(t) * g.C + c;
        const std::int64_t at = swapped ? kt * g.O + o : gather ? o * KT + kt : (static_cast<std::int64_t>(t) * g.O + o) * g.C + c;
        dweight[(static_cast<std::int64_t>(o) * g.C + c) * taps + t] += dw[at];
      }
}

// The same summed per fixed slice of the batch, each slice on one thread with its own partial
// sums, added in slice order: for large images, where a thread keeps its blocks in its own cache
// and the partial sums are small next to the products.
template <typename T>
void weight_grad_by_slices(T* dweight, const T* dout, const T* in, const ConvGeom& g, T* ws, ThreadPool* pool) {
  const int nr = Kernels<T>::nr(), taps = g.KH * g.KW, OH = g.OH(), OW = g.OW();
  const Layout L(g, nr);
  T* zero = ws;
  std::fill(zero, zero + L.zeros, T(0));
  const int slices = weight_grad_slices(g);
  const std::int64_t part = static_cast<std::int64_t>(taps) * g.O * g.C;
  T* parts = ws + L.zeros + round_up(g.C, nr) * taps * g.O;
  std::fill(parts, parts + slices * part, T(0));
  const bool gather = gathers_weight<T>(g);
  const int KT = taps * g.C;
  const bool swapped = gather && KT < nr;
  const std::vector<std::int64_t> offs = tap_offsets(g);
  const std::int64_t sample = static_cast<std::int64_t>(g.H) * g.W * g.C;
  auto body = [&](std::int64_t s0, std::int64_t s1, int) {
    std::vector<const T*> x(static_cast<size_t>(taps) * kPixelBlock);
    // Gathered rows (pixel, tap*C + c), with nr values of slack for the kernel's loads past a row.
    std::vector<T> rows_buf(gather ? static_cast<size_t>(kPixelBlock) * KT + nr : 0);
    std::vector<const T*> xg(gather ? kPixelBlock : 0);
    for (std::int64_t sl = s0; sl < s1; ++sl) {
      T* dw = parts + sl * part;  // (tap, O, C)
      // Whole pixel blocks per slice: a slice edge inside a block left short blocks whose tiles ran
      // a few pixels each.
      const std::int64_t P = static_cast<std::int64_t>(g.N) * OH * OW, blocks = (P + kPixelBlock - 1) / kPixelBlock;
      const std::int64_t p_begin = blocks * sl / slices * kPixelBlock;
      const std::int64_t p_end = std::min(P, blocks * (sl + 1) / slices * kPixelBlock);
      for (std::int64_t pb = p_begin; pb < p_end; pb += kPixelBlock) {
        const int nb = static_cast<int>(std::min<std::int64_t>(kPixelBlock, p_end - pb));
        for (int i = 0; i < nb; ++i) {
          const std::int64_t p = pb + i;
          const T* base = in + p / (OH * OW) * sample;
          const std::int64_t* o = offs.data() + p % (OH * OW) * taps;
          for (int t = 0; t < taps; ++t) x[static_cast<size_t>(t) * kPixelBlock + i] = o[t] >= 0 ? base + o[t] : zero;
        }
        if (gather) {
          // dw as (O, taps*C): the same (tap, O, C) slice buffer, read back below in that order.
          for (int i = 0; i < nb; ++i) {
            T* row = rows_buf.data() + static_cast<std::int64_t>(i) * KT;
            for (int t = 0; t < taps; ++t) std::copy(x[static_cast<size_t>(t) * kPixelBlock + i], x[static_cast<size_t>(t) * kPixelBlock + i] + g.C, row + static_cast<std::int64_t>(t) * g.C);
            xg[i] = row;
          }
          if (swapped) {
            // Fewer gathered values than a vector: dw^T (taps*C, O), vectors along the output channels.
            for (int i = 0; i < nb; ++i) xg[i] = dout + (pb + i) * g.O;
            for (int k0 = 0; k0 < KT; k0 += MR)
              for (int o0 = 0; o0 < g.O; o0 += nr)
                Kernels<T>::dwk(nb, rows_buf.data() + k0, KT, xg.data(), o0, dw + static_cast<std::int64_t>(k0) * g.O + o0,
                                g.O, std::min(MR, KT - k0), std::min(nr, g.O - o0));
            continue;
          }
          for (int c0 = 0; c0 < KT; c0 += nr)
            for (int o0 = 0; o0 < g.O; o0 += MR)
              Kernels<T>::dwk(nb, dout + pb * g.O + o0, g.O, xg.data(), c0, dw + static_cast<std::int64_t>(o0) * KT + c0, KT,
                              std::min(MR, g.O - o0), std::min(nr, KT - c0));
          continue;
        }
        for (int t = 0; t < taps; ++t)
          for (int c0 = 0; c0 < g.C; c0 += nr)
            for (int o0 = 0; o0 < g.O; o0 += MR)
              Kernels<T>::dwk(nb, dout + pb * g.O + o0, g.O, x.data() + static_cast<size_t>(t) * kPixelBlock, c0,
                              dw + (static_cast<std::int64_t>(t) * g.O + o0) * g.C + c0, g.C, std::min(MR, g.O - o0),
                              std::min(nr, g.C - c0));
      }
    }
  };
  if (pool) pool->parallel_for(slices, body, 1);
  else body(0, slices, 0);
  for (int o = 0; o < g.O; ++o)
    for (int c = 0; c < g.C; ++c)
      for (int t = 0; t < taps; ++t) {
        T sum = 0;
        const std::int64_t kt = static_cast<std::int64_t>(t) * g.C + c;
        const std::int64_t at = swapped ? kt * g.O + o : gather ? o * KT + kt : (static_cast<std::int64_t>(t) * g.O + o) * g.C + c;
        for (int sl = 0; sl < slices; ++sl) sum += parts[sl * part + at];
        dweight[(static_cast<std::int64_t>(o) * g.C + c) * taps + t] += sum;
      }
}

template <typename T>
void rows_backward_weight(T* dweight, const T* dout, const T* in, const ConvGeom& g, T* ws, ThreadPool* pool) {
  if (weight_grad_slices(g) > 1) weight_grad_by_slices(dweight, dout, in, g, ws, pool);
  else weight_grad_by_tiles(dweight, dout, in, g, ws, pool);
}

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
    rows_forward(out, in, weight, g, ws.col.data(), pool);
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
  rows_backward_weight(dweight, dout, in, g, ws.col.data(), pool);
  if (din) rows_backward_input(din, dout, weight, g, ws.col.data(), pool, add_din);
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
