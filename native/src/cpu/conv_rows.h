// Internals of the channels-last convolution (cpu/ops_conv.cpp), shared by its drivers:
// cpu/conv_rows.cpp (forward and input gradient) and cpu/conv_weight_grad.cpp. Not part of the
// engine's API.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "cpu/ops.h"

namespace tb {
class ThreadPool;

namespace conv_detail {

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

const FloatKernels& float_kernels();

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

inline std::int64_t round_up(std::int64_t v, std::int64_t m) { return (v + m - 1) / m * m; }

// Batch slices for the weight gradient: 8 (a fixed number, so results do not depend on the thread
// count) when the output has at least 16384 pixels (the board's 9x9 stage at batch 256), else 1,
// summed by tiles (rows_backward_weight).
inline int weight_grad_slices(const ConvGeom& g) {
  const std::int64_t P = static_cast<std::int64_t>(g.N) * g.OH() * g.OW();
  return P >= 16384 ? static_cast<int>(std::min<std::int64_t>(8, (P + kPixelBlock - 1) / kPixelBlock)) : 1;
}

// Workspace, in values: a row of zeros (the weight gradient's input row for a padding tap: the
// forward and input gradient run only in-image taps), then the forward's packed weights, or the
// backward's packed transposed weights and the weight gradient's accumulator.
struct Layout {
  std::int64_t zeros, forward, backward;
  Layout(const ConvGeom& g, int nr) {
    const std::int64_t taps = static_cast<std::int64_t>(g.KH) * g.KW;
    zeros = round_up(g.C, nr);  // the kernel loads whole vectors of channels
    forward = round_up(g.O, nr) * taps * g.C;
    backward = round_up(g.C, nr) * taps * g.O + weight_grad_slices(g) * taps * g.O * g.C;
  }
  std::int64_t total() const { return zeros + std::max(forward, backward); }
};

// Few input channels (a first layer on 1-3 planes): a tap's row is too short for the kernels (one
// multiply per pointer in the forward, 1 of 32 lanes used in the weight gradient), so each pixel's
// taps are gathered into one contiguous row of taps*C values first, and the kernels see one tap.
inline bool gathers_forward(const ConvGeom& g) { return g.KH * g.KW > 1 && g.C < 8; }
template <typename T>
bool gathers_weight(const ConvGeom& g) { return g.KH * g.KW > 1 && g.C < Kernels<T>::nr(); }

template <typename T>
T weight_at(const T* w, const ConvGeom& g, int o, int c, int kh, int kw) {
  return w[((static_cast<std::int64_t>(o) * g.C + c) * g.KH + kh) * g.KW + kw];
}


// Packs the weights as (panel of nr columns, tap, row, nr), zero past the last column: columns are
// the output channels and rows the input channels for the forward (by_output), the other way round
// for the input gradient. Returns the number of panels.
template <typename T>
int pack_weights(T* b, const T* weight, const ConvGeom& g, int nr, bool by_output) {
  const int taps = g.KH * g.KW, cols = by_output ? g.O : g.C, rows = by_output ? g.C : g.O;
  const int panels = (cols + nr - 1) / nr;
  for (int j = 0; j < panels; ++j)
    for (int t = 0; t < taps; ++t)
      for (int r = 0; r < rows; ++r) {
        T* dst = b + ((static_cast<std::int64_t>(j) * taps + t) * rows + r) * nr;
        for (int jj = 0; jj < nr; ++jj) {
          const int col = j * nr + jj;
          dst[jj] = col >= cols ? T(0)
                    : by_output ? weight_at(weight, g, col, r, t / g.KW, t % g.KW)
                                : weight_at(weight, g, r, col, t / g.KW, t % g.KW);
        }
      }
  return panels;
}

// For each output pixel of one image and each tap, where the tap's input row starts within the
// sample's rows (in values), or -1 in the padding: (OH*OW, taps), the same for every sample, so
// building a tile's row pointers is a lookup.
std::vector<std::int64_t> tap_offsets(const ConvGeom& g);

// For each output pixel position of one image, the taps that fall inside the image and where their
// input rows start within a sample (in values): every sample has the same, so a tile of MR samples at
// one position runs only those taps (on a 3x3 board 40% of a 3x3 kernel's taps are padding).
struct PositionTaps {
  std::vector<int> start, ids;     // position r's taps are ids[start[r] .. start[r+1])
  std::vector<std::int64_t> offs;  // their row offsets, alongside ids
};

PositionTaps forward_taps(const ConvGeom& g);
// The input pixels' side: at input position (qh, qw), the taps whose output pixel reads it (stride
// phase and image bounds), and that output pixel's row offset within a sample of dout.
PositionTaps input_taps(const ConvGeom& g);

// The drivers, on a workspace of Layout(g, Kernels<T>::nr()).total() values.
template <typename T>
void rows_forward(T* out, const T* in, const T* weight, const ConvGeom& g, T* ws, ThreadPool* pool);
template <typename T>
void rows_backward_input(T* din, const T* dout, const T* weight, const ConvGeom& g, T* ws, ThreadPool* pool, bool add);
template <typename T>
void rows_backward_weight(T* dweight, const T* dout, const T* in, const ConvGeom& g, T* ws, ThreadPool* pool);

}  // namespace conv_detail
}  // namespace tb
