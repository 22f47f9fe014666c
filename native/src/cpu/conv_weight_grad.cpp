// The channels-last convolution's weight gradient (cpu/conv_rows.h): an outer-product kernel
// (dwk, cpu/conv_kernel.inc) over blocks of 256 output pixels, by tiles of the gradient on small
// images and by fixed batch slices on large ones; the same bits at any thread count either way.
#include <algorithm>
#include <vector>

#include "core/threads.h"
#include "cpu/conv_rows.h"

namespace tb::conv_detail {

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


template void rows_backward_weight<float>(float*, const float*, const float*, const ConvGeom&, float*, ThreadPool*);
template void rows_backward_weight<double>(double*, const double*, const double*, const ConvGeom&, double*, ThreadPool*);

}  // namespace tb::conv_detail
