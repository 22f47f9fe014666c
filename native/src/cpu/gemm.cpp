#include "cpu/gemm.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "core/device_info.h"
#include "core/threads.h"
#include "cpu/simd_clones.h"

namespace tb {
namespace gemm_detail {
void kernel_generic(int, const float*, const float*, float*, int, int, int, float, float);
void dot_kernel_generic(int, const float*, std::int64_t, const float*, std::int64_t, float*, int, int, int, float, float);
#if defined(TB_HAVE_X86_KERNELS)
void kernel_avx2(int, const float*, const float*, float*, int, int, int, float, float);
void kernel_avx512(int, const float*, const float*, float*, int, int, int, float, float);
void dot_kernel_avx2(int, const float*, std::int64_t, const float*, std::int64_t, float*, int, int, int, float, float);
void dot_kernel_avx512(int, const float*, std::int64_t, const float*, std::int64_t, float*, int, int, int, float, float);
#endif
}  // namespace gemm_detail

namespace {

using Kernel = void (*)(int, const float*, const float*, float*, int, int, int, float, float);
using DotKernel = void (*)(int, const float*, std::int64_t, const float*, std::int64_t, float*, int, int, int, float,
                           float);

struct KernelChoice {
  Kernel fn;
  DotKernel dot;
  int mr;
  int nr;
  const char* name;
  int lanes;
};

bool has(const CpuInfo& cpu, const char* feature) {
  return std::find(cpu.simd.begin(), cpu.simd.end(), feature) != cpu.simd.end();
}

// TB_CPU_KERNEL=avx2 or generic picks a narrower kernel than the CPU allows (never a wider one), so
// the tests run every kernel users' CPUs may get on a machine that has AVX-512.
const KernelChoice& choice() {
  static const KernelChoice c = [] {
    const char* forced = std::getenv("TB_CPU_KERNEL");
    const std::string want = forced ? forced : "";
    const bool generic_only = want == "generic";
#if defined(TB_HAVE_X86_KERNELS)
    const CpuInfo cpu = cpu_info();
    if (!generic_only && want != "avx2" && has(cpu, "avx512f"))
      return KernelChoice{gemm_detail::kernel_avx512, gemm_detail::dot_kernel_avx512, 6, 32, "avx512", 16};
    if (!generic_only && has(cpu, "avx2") && has(cpu, "fma"))
      return KernelChoice{gemm_detail::kernel_avx2, gemm_detail::dot_kernel_avx2, 6, 16, "avx2", 8};
#endif
    (void)generic_only;
    return KernelChoice{gemm_detail::kernel_generic, gemm_detail::dot_kernel_generic, 6, 16, "generic", 4};
  }();
  return c;
}

// Block sizes: an (MC, KC) block of A stays in L2, a (KC, NC) panel of B in L3.
constexpr int KC = 256;
constexpr int MC = 120;  // a multiple of MR = 6
constexpr int NC = 3072;
// Products with B transposed and a reduction at least this long take the dot kernel (gemm_dot): on the
// board network's weight gradients (bench/cpu/gemm-shapes.cpp, 2 threads) it ran 144-176 GFLOP/s where
// transposing B into panels ran 32-124 (24 to 576 rows); on the MLP's first layer (K = 784) 167-175
// against 130-134, while at K = 256 packing stays ahead (120-133 against 93-108).
constexpr int kDotMinK = 512;

TB_ALWAYS_INLINE inline float at(const float* X, int ld, bool trans, int r, int c) {
  return trans ? X[static_cast<std::int64_t>(c) * ld + r] : X[static_cast<std::int64_t>(r) * ld + c];
}

// Packs op(A)[i0:i0+mc, p0:p0+kc] into MR-row panels, zero-padding the edge.
TB_SIMD_CLONES void pack_a(const float* A, int lda, bool trans, int i0, int mc, int p0, int kc, int mr, float* out) {
  for (int ip = 0; ip < mc; ip += mr) {
    const int rows = std::min(mr, mc - ip);
    for (int k = 0; k < kc; ++k) {
      for (int i = 0; i < rows; ++i) *out++ = at(A, lda, trans, i0 + ip + i, p0 + k);
      for (int i = rows; i < mr; ++i) *out++ = 0.0f;
    }
  }
}

// Packs op(B)[p0:p0+kc, j0+jp : j0+jp+nr] (one NR-column panel), zero-padding the edge.
TB_SIMD_CLONES void pack_b_panel(const float* B, int ldb, bool trans, int p0, int kc, int j, int cols, int nr, float* out) {
  if (!trans) {
    for (int k = 0; k < kc; ++k) {
      const float* row = B + static_cast<std::int64_t>(p0 + k) * ldb + j;
      for (int c = 0; c < cols; ++c) out[c] = row[c];
      for (int c = cols; c < nr; ++c) out[c] = 0.0f;
      out += nr;
    }
  } else {
    // Walk each source row of B^T contiguously; the strided writes stay in L1.
    for (int c = 0; c < cols; ++c) {
      const float* src = B + static_cast<std::int64_t>(j + c) * ldb + p0;
      for (int k = 0; k < kc; ++k) out[static_cast<std::int64_t>(k) * nr + c] = src[k];
    }
    for (int c = cols; c < nr; ++c)
      for (int k = 0; k < kc; ++k) out[static_cast<std::int64_t>(k) * nr + c] = 0.0f;
  }
}

}  // namespace

// Splits K into one contiguous range per thread, computes each partial product
// single-threaded, and adds the partials in thread order (deterministic for a
// given thread count).
static void gemm_split_k(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                         const float* B, int ldb, float beta, float* C, int ldc, ThreadPool* pool) {
  const int parts = pool->size();
  std::vector<float> partial(static_cast<size_t>(parts) * M * N);
  pool->parallel_for(parts, [&](std::int64_t b, std::int64_t e, int) {
    for (std::int64_t p = b; p < e; ++p) {
      const int k0 = static_cast<int>(static_cast<std::int64_t>(K) * p / parts);
      const int k1 = static_cast<int>(static_cast<std::int64_t>(K) * (p + 1) / parts);
      const float* Ap = trans_a ? A + static_cast<std::int64_t>(k0) * lda : A + k0;
      const float* Bp = trans_b ? B + k0 : B + static_cast<std::int64_t>(k0) * ldb;
      gemm(trans_a, trans_b, M, N, k1 - k0, 1.0f, Ap, lda, Bp, ldb, 0.0f, partial.data() + p * M * N, N, nullptr);
    }
  });
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0;
      for (int p = 0; p < parts; ++p) s += partial[(static_cast<size_t>(p) * M + i) * N + j];
      float& c = C[static_cast<std::int64_t>(i) * ldc + j];
      c = alpha * s + (beta == 0.0f ? 0.0f : beta * c);
    }
}

// C = alpha A . B^T + beta C with A (M, K) and B (N, K) both row-major along k and K long (a
// convolution's weight gradient reduces over batch x pixels): the dot kernel reads both in place
// instead of transposing all of B into panels. K is cut into blocks whose slice of A stays in L2;
// C is cut into 4 x 6 tiles, each owned by one thread and summed block by block in k order, so
// results do not depend on the thread count.
static void gemm_dot(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                     float* C, int ldc, ThreadPool* pool) {
  constexpr int R = 4, S = 6;
  const int igroups = (M + R - 1) / R, jgroups = (N + S - 1) / S;
  const int kb = std::max(1024, std::min(8192, (1 << 17) / std::max(1, M) / 16 * 16));
  const DotKernel dot = choice().dot;
  auto body = [&](std::int64_t t0, std::int64_t t1, int) {
    for (int k0 = 0; k0 < K; k0 += kb) {
      const int kc = std::min(kb, K - k0);
      for (std::int64_t t = t0; t < t1; ++t) {
        const int i = static_cast<int>(t % igroups) * R, j = static_cast<int>(t / igroups) * S;
        dot(kc, A + static_cast<std::int64_t>(i) * lda + k0, lda, B + static_cast<std::int64_t>(j) * ldb + k0, ldb,
            C + static_cast<std::int64_t>(i) * ldc + j, ldc, std::min(R, M - i), std::min(S, N - j),
            alpha, k0 == 0 ? beta : 1.0f);
      }
    }
  };
  const std::int64_t tiles = static_cast<std::int64_t>(igroups) * jgroups;
  if (pool) pool->parallel_for(tiles, body, 1);
  else body(0, tiles, 0);
}

std::string gemm_kernel_name() { return choice().name; }
int gemm_kernel_lanes() { return choice().lanes; }

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
          int ldb, float beta, float* C, int ldc, ThreadPool* pool) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) C[static_cast<std::int64_t>(i) * ldc + j] *= beta;
    return;
  }
  const KernelChoice& kc_choice = choice();
  const int mr = kc_choice.mr, nr = kc_choice.nr;
  const int threads = pool ? pool->size() : 1;
  if (!trans_a && trans_b && K >= kDotMinK) {
    gemm_dot(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, pool);
    return;
  }
  // Tall-K products with a tiny C (weight gradients of early convolutions) cannot
  // keep threads busy by tiling C, so K is split instead.
  const std::int64_t c_tiles = static_cast<std::int64_t>((M + MC - 1) / MC) * ((N + nr - 1) / nr);
  if (pool && threads > 1 && c_tiles < threads && K >= 4 * KC * threads &&
      static_cast<std::int64_t>(M) * N <= (1 << 16)) {
    gemm_split_k(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, pool);
    return;
  }
  // Packing buffers are reused across calls (fresh multi-megabyte buffers cost a page
  // fault per 4 KiB). They belong to the calling thread; pool workers use its apack slots.
  thread_local std::vector<float> tl_bpack;
  thread_local std::vector<std::vector<float>> tl_apack;
  // Plain references: a lambda naming a thread_local would see the worker's own (empty) copy.
  std::vector<float>& bpack = tl_bpack;
  std::vector<std::vector<float>>& apack = tl_apack;
  if (bpack.size() < static_cast<size_t>(KC) * (NC + nr)) bpack.resize(static_cast<size_t>(KC) * (NC + nr));
  if (apack.size() < static_cast<size_t>(threads)) apack.resize(threads);
  for (auto& a : apack)
    if (a.size() < static_cast<size_t>(MC + mr) * KC) a.resize(static_cast<size_t>(MC + mr) * KC);

  for (int j0 = 0; j0 < N; j0 += NC) {
    const int nc = std::min(NC, N - j0);
    const int npanels = (nc + nr - 1) / nr;
    for (int p0 = 0; p0 < K; p0 += KC) {
      const int kc = std::min(KC, K - p0);
      const float beta_block = p0 == 0 ? beta : 1.0f;
      auto pack_panels = [&](std::int64_t b, std::int64_t e, int) {
        for (std::int64_t p = b; p < e; ++p) {
          const int j = j0 + static_cast<int>(p) * nr;
          pack_b_panel(B, ldb, trans_b, p0, kc, j, std::min(nr, N - j), nr, bpack.data() + p * kc * nr);
        }
      };
      if (pool) pool->parallel_for(npanels, pack_panels, 4);
      else pack_panels(0, npanels, 0);

      // C is cut into tiles of (a group of MR-row blocks) x (a group of NR panels), of
      // equal size and a multiple of the thread count where the shape allows, so the
      // static split gives every thread the same work (MC-row groups left a thread 8
      // rows of 128 while the other did 120). Each C element is owned by one tile and
      // summed in k order, so results do not depend on the thread count.
      const int mgroups = (M + MC - 1) / MC;
      const int group_rows = ((M + mgroups - 1) / mgroups + mr - 1) / mr * mr;
      int ngroups = std::max(1, (2 * threads + mgroups - 1) / mgroups);
      ngroups = std::min(npanels, (ngroups + threads - 1) / threads * threads);
      const int panels_per_group = (npanels + ngroups - 1) / ngroups;
      auto compute = [&](std::int64_t b, std::int64_t e, int worker) {
        float* ap = apack[worker].data();
        int packed_mg = -1;
        for (std::int64_t t = b; t < e; ++t) {
          const int mg = static_cast<int>(t / ngroups), ng = static_cast<int>(t % ngroups);
          const int i0 = mg * group_rows;
          const int mc = std::min(group_rows, M - i0);
          if (mc <= 0) continue;
          if (mg != packed_mg) {
            pack_a(A, lda, trans_a, i0, mc, p0, kc, mr, ap);
            packed_mg = mg;
          }
          const int p_end = std::min(npanels, (ng + 1) * panels_per_group);
          for (int p = ng * panels_per_group; p < p_end; ++p) {
            const int j = j0 + p * nr;
            const int cols = std::min(nr, N - j);
            const float* bp = bpack.data() + static_cast<std::int64_t>(p) * kc * nr;
            for (int ip = 0; ip < mc; ip += mr) {
              const int rows = std::min(mr, mc - ip);
              kc_choice.fn(kc, ap + static_cast<std::int64_t>(ip) * kc, bp,
                           C + static_cast<std::int64_t>(i0 + ip) * ldc + j, ldc, rows, cols, alpha, beta_block);
            }
          }
        }
      };
      const std::int64_t tiles = static_cast<std::int64_t>(mgroups) * ngroups;
      if (pool) pool->parallel_for(tiles, compute, 1);
      else compute(0, tiles, 0);
    }
  }
}

void gemm(bool trans_a, bool trans_b, int M, int N, int K, double alpha, const double* A, int lda, const double* B,
          int ldb, double beta, double* C, int ldc, ThreadPool*) {
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double s = 0;
      for (int k = 0; k < K; ++k) {
        const double a = trans_a ? A[static_cast<std::int64_t>(k) * lda + i] : A[static_cast<std::int64_t>(i) * lda + k];
        const double b = trans_b ? B[static_cast<std::int64_t>(j) * ldb + k] : B[static_cast<std::int64_t>(k) * ldb + j];
        s += a * b;
      }
      double& c = C[static_cast<std::int64_t>(i) * ldc + j];
      c = alpha * s + (beta == 0.0 ? 0.0 : beta * c);
    }
  }
}

}  // namespace tb
