// AVX2 + FMA micro-kernels (built with those flags, see CMakeLists.txt; called only when the CPU
// has them), written with intrinsics. The plain loops of gemm_kernel.inc, compiled for AVX2 by
// GCC 12, kept the (6, 16) tile on the stack and ran at 2.8 GFLOP/s on a core whose FMA peak
// measured 102 (bench/cpu/gemm-shapes.cpp): a tile must live in the 16 ymm registers, which only
// explicit vectors guarantee. Same contracts as gemm_kernel.inc and conv_kernel.inc.
#include <immintrin.h>

#include <cstdint>

#if defined(__GNUC__)
#define TB_AVX2_INLINE inline __attribute__((always_inline))
#else
#define TB_AVX2_INLINE inline
#endif

namespace tb::gemm_detail {

namespace {

constexpr int MR = 6;

// A (6, 16) tile of accumulators: 12 ymm, leaving 4 for the operands. Named members, never
// indexed at run time: an array indexed by a row number after the loop made GCC keep the whole
// tile on the stack and store it every k step.
struct Tile {
  __m256 l0, h0, l1, h1, l2, h2, l3, h3, l4, h4, l5, h5;
};

inline void zero(Tile& t) {
  t.l0 = t.h0 = t.l1 = t.h1 = t.l2 = t.h2 = t.l3 = t.h3 = t.l4 = t.h4 = t.l5 = t.h5 = _mm256_setzero_ps();
}

// t += a[i] * (b0, b1) for the six rows: one k step.
TB_AVX2_INLINE void step(Tile& t, const float* a0, const float* a1, const float* a2, const float* a3, const float* a4,
                         const float* a5, const float* b) {
  const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
  __m256 a = _mm256_broadcast_ss(a0);
  t.l0 = _mm256_fmadd_ps(a, b0, t.l0);
  t.h0 = _mm256_fmadd_ps(a, b1, t.h0);
  a = _mm256_broadcast_ss(a1);
  t.l1 = _mm256_fmadd_ps(a, b0, t.l1);
  t.h1 = _mm256_fmadd_ps(a, b1, t.h1);
  a = _mm256_broadcast_ss(a2);
  t.l2 = _mm256_fmadd_ps(a, b0, t.l2);
  t.h2 = _mm256_fmadd_ps(a, b1, t.h2);
  a = _mm256_broadcast_ss(a3);
  t.l3 = _mm256_fmadd_ps(a, b0, t.l3);
  t.h3 = _mm256_fmadd_ps(a, b1, t.h3);
  a = _mm256_broadcast_ss(a4);
  t.l4 = _mm256_fmadd_ps(a, b0, t.l4);
  t.h4 = _mm256_fmadd_ps(a, b1, t.h4);
  a = _mm256_broadcast_ss(a5);
  t.l5 = _mm256_fmadd_ps(a, b0, t.l5);
  t.h5 = _mm256_fmadd_ps(a, b1, t.h5);
}

// The finished tile, spilled once to memory for the row-by-row stores.
struct Spilled {
  alignas(32) float v[MR][16];
};

inline void spill(const Tile& t, Spilled& s) {
  _mm256_store_ps(s.v[0], t.l0);
  _mm256_store_ps(s.v[0] + 8, t.h0);
  _mm256_store_ps(s.v[1], t.l1);
  _mm256_store_ps(s.v[1] + 8, t.h1);
  _mm256_store_ps(s.v[2], t.l2);
  _mm256_store_ps(s.v[2] + 8, t.h2);
  _mm256_store_ps(s.v[3], t.l3);
  _mm256_store_ps(s.v[3] + 8, t.h3);
  _mm256_store_ps(s.v[4], t.l4);
  _mm256_store_ps(s.v[4] + 8, t.h4);
  _mm256_store_ps(s.v[5], t.l5);
  _mm256_store_ps(s.v[5] + 8, t.h5);
}

// Row i of the tile into out[0, cols): out = alpha * acc + beta * out (beta 0: out is not read),
// or out += acc with add. Full rows go as vectors, an edge row element by element.
enum class Store { Scale, Add };

template <Store S>
inline void store_row(const Spilled& t, int i, float* out, int cols, float alpha, float beta) {
  const float* row = t.v[i];
  if (cols == 16) {
    __m256 lo = _mm256_load_ps(row), hi = _mm256_load_ps(row + 8);
    if constexpr (S == Store::Add) {
      lo = _mm256_add_ps(lo, _mm256_loadu_ps(out));
      hi = _mm256_add_ps(hi, _mm256_loadu_ps(out + 8));
    } else {
      const __m256 va = _mm256_set1_ps(alpha);
      lo = _mm256_mul_ps(va, lo);
      hi = _mm256_mul_ps(va, hi);
      if (beta != 0.0f) {
        const __m256 vb = _mm256_set1_ps(beta);
        lo = _mm256_fmadd_ps(vb, _mm256_loadu_ps(out), lo);
        hi = _mm256_fmadd_ps(vb, _mm256_loadu_ps(out + 8), hi);
      }
    }
    _mm256_storeu_ps(out, lo);
    _mm256_storeu_ps(out + 8, hi);
    return;
  }
  for (int j = 0; j < cols; ++j) {
    if constexpr (S == Store::Add) out[j] += row[j];
    else out[j] = alpha * row[j] + (beta == 0.0f ? 0.0f : beta * out[j]);
  }
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace

// (6, 16) tile from packed panels: a is (kc, 6), b is (kc, 16).
void kernel_avx2(int kc, const float* __restrict a, const float* __restrict b, float* __restrict c, int ldc, int rows,
                 int cols, float alpha, float beta) {
  Tile t;
  zero(t);
  for (int k = 0; k < kc; ++k, a += MR, b += 16) step(t, a, a + 1, a + 2, a + 3, a + 4, a + 5, b);
  Spilled out;
  spill(t, out);
  for (int i = 0; i < rows; ++i) store_row<Store::Scale>(out, i, c + static_cast<std::int64_t>(i) * ldc, cols, alpha, beta);
}

// c[i][j] = alpha * sum_k a[i][k] * b[j][k] + beta * c[i][j], rows <= 4, cols <= 6, both read in
// place. Two rows at a time: 2 x 6 lane-wise sums are 12 ymm, with one for A's row and one for B's.
void dot_kernel_avx2(int kc, const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float* c, int ldc,
                     int rows, int cols, float alpha, float beta) {
  constexpr int S = 6;
  const float* br[S];
  // Columns past the edge read column 0 again (computed, never stored): no branch in the loop.
  for (int j = 0; j < S; ++j) br[j] = b + (j < cols ? j : 0) * ldb;
  for (int i0 = 0; i0 < rows; i0 += 2) {
    const float* a0 = a + i0 * lda;
    const float* a1 = a + (i0 + 1 < rows ? i0 + 1 : i0) * lda;
    __m256 acc0[S], acc1[S];
    for (int j = 0; j < S; ++j) acc0[j] = acc1[j] = _mm256_setzero_ps();
    int k = 0;
    for (; k + 8 <= kc; k += 8) {
      const __m256 x0 = _mm256_loadu_ps(a0 + k), x1 = _mm256_loadu_ps(a1 + k);
      for (int j = 0; j < S; ++j) {
        const __m256 y = _mm256_loadu_ps(br[j] + k);
        acc0[j] = _mm256_fmadd_ps(x0, y, acc0[j]);
        acc1[j] = _mm256_fmadd_ps(x1, y, acc1[j]);
      }
    }
    float s0[S], s1[S];
    for (int j = 0; j < S; ++j) {
      s0[j] = hsum(acc0[j]);
      s1[j] = hsum(acc1[j]);
    }
    for (; k < kc; ++k)
      for (int j = 0; j < S; ++j) {
        s0[j] += a0[k] * br[j][k];
        s1[j] += a1[k] * br[j][k];
      }
    for (int r = 0; r < 2 && i0 + r < rows; ++r) {
      float* ci = c + static_cast<std::int64_t>(i0 + r) * ldc;
      const float* s = r == 0 ? s0 : s1;
      for (int j = 0; j < cols; ++j) ci[j] = alpha * s[j] + (beta == 0.0f ? 0.0f : beta * ci[j]);
    }
  }
}

// Indirect GEMM over taps (conv_kernel.inc's contract): a holds taps x 6 row pointers, b is
// (taps, K, 16) packed, c holds 6 row pointers.
void igemm_avx2(int taps, int K, const float* const* a, const float* __restrict b, const int* tap_ids,
                float* const* c, int rows, int cols, bool add) {
  Tile t;
  zero(t);
  for (int tap = 0; tap < taps; ++tap) {
    const float* const* ar = a + tap * MR;
    const float* bk = b + static_cast<std::int64_t>(tap_ids ? tap_ids[tap] : tap) * K * 16;
    const float *a0 = ar[0], *a1 = ar[1], *a2 = ar[2], *a3 = ar[3], *a4 = ar[4], *a5 = ar[5];
    for (int k = 0; k < K; ++k, bk += 16) step(t, a0 + k, a1 + k, a2 + k, a3 + k, a4 + k, a5 + k, bk);
  }
  Spilled out;
  spill(t, out);
  for (int i = 0; i < rows; ++i) {
    if (add) store_row<Store::Add>(out, i, c[i], cols, 1.0f, 0.0f);
    else store_row<Store::Scale>(out, i, c[i], cols, 1.0f, 0.0f);
  }
}

// Weight-gradient tile (conv_kernel.inc's contract): dw[i][j] += sum_p g[p][i] * x[p][off + j].
void dwk_avx2(int P, const float* __restrict g, std::int64_t ldg, const float* const* x, int off, float* dw, int ldw,
              int rows, int cols) {
  Tile t;
  zero(t);
  for (int p = 0; p < P; ++p) {
    const float* gp = g + p * ldg;
    step(t, gp, gp + 1, gp + 2, gp + 3, gp + 4, gp + 5, x[p] + off);
  }
  Spilled out;
  spill(t, out);
  for (int i = 0; i < rows; ++i) store_row<Store::Add>(out, i, dw + static_cast<std::int64_t>(i) * ldw, cols, 1.0f, 0.0f);
}

}  // namespace tb::gemm_detail
