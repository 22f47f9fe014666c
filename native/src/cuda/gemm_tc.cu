// The engine's own tensor-core GEMM for mixed precision: fp32 operands are
// rounded to bf16 or fp16 as they are staged in shared memory (no separate
// cast pass, any shape, any transpose), multiplied with WMMA and accumulated
// in fp32. The always-available path; cuBLASLt is used instead where the
// per-shape timing says it is faster (gemm_engine.cu).
//
// Split-K (ADR 0020, step 5): a weight gradient is (<= 96) x (<= 936) x (batch x
// pixels), a handful of 64x64 tiles over a K of tens of thousands, so a few
// blocks ran while the other SMs idled. Each of S slices of K then writes its
// fp32 partial tile to a workspace, and a second kernel sums the slices in
// slice order and applies alpha and beta: the same bits on every run, which
// atomics into C would not give.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <algorithm>
#include <string>

#include "core/errors.h"

#include "cuda/cuda_check.h"
#include "cuda/kernels.h"

namespace tb::cuda {
namespace {

constexpr int BM = 64, BN = 64, BK = 32;
constexpr int LDA_S = BK + 8, LDB_S = BN + 8, LDC_S = BN + 4;  // padding against bank conflicts, 32-byte rows for WMMA

template <typename T>
__device__ inline T round_to(float v);
template <>
__device__ inline __nv_bfloat16 round_to<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}
template <>
__device__ inline __half round_to<__half>(float v) {
  return __float2half_rn(v);  // overflow becomes inf, which fp16 loss scaling detects
}

// 128 threads: 4 warps in a 2x2 grid, each owning a 32x32 piece of the 64x64 tile. Block z multiplies
// K's slice [z * k_len, (z + 1) * k_len); with a `partial` workspace it writes its raw sums to slice z of it
// (M x N each), otherwise alpha * sum + beta * C to C.
template <typename T>
__global__ void __launch_bounds__(128) gemm_tc_k(bool ta, bool tb, int M, int N, int K, int k_len, float alpha, const float* __restrict__ A,
                                                 int lda, const float* __restrict__ B, int ldb, float beta, float* __restrict__ C,
                                                 int ldc, float* __restrict__ partial) {
#if TB_HAS_WMMA
  using namespace nvcuda;
  __shared__ __align__(32) T As[BM][LDA_S];
  __shared__ __align__(32) T Bs[BK][LDB_S];
  __shared__ __align__(32) float Cs[BM][LDC_S];
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int warp = threadIdx.x / 32, wm = warp / 2, wn = warp % 2;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);
  const int k_begin = blockIdx.z * k_len, k_end = K < k_begin + k_len ? K : k_begin + k_len;
  for (int k0 = k_begin; k0 < k_end; k0 += BK) {
    for (int i = threadIdx.x; i < BM * BK; i += blockDim.x) {
      const int r = i / BK, k = i % BK, gm = m0 + r, gk = k0 + k;
      const float v = gm < M && gk < k_end ? (ta ? A[static_cast<std::int64_t>(gk) * lda + gm] : A[static_cast<std::int64_t>(gm) * lda + gk]) : 0.f;
      As[r][k] = round_to<T>(v);
      const int kk = i / BN, nn = i % BN, gk2 = k0 + kk, gn = n0 + nn;
      const float w = gk2 < k_end && gn < N ? (tb ? B[static_cast<std::int64_t>(gn) * ldb + gk2] : B[static_cast<std::int64_t>(gk2) * ldb + gn]) : 0.f;
      Bs[kk][nn] = round_to<T>(w);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b[2];
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], &As[wm * 32 + i * 16][kk], LDA_S);
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], &Bs[kk][wn * 32 + j * 16], LDB_S);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(&Cs[wm * 32 + i * 16][wn * 32 + j * 16], acc[i][j], LDC_S, wmma::mem_row_major);
  __syncthreads();
  float* slice = partial ? partial + static_cast<std::int64_t>(blockIdx.z) * M * N : nullptr;
  for (int i = threadIdx.x; i < BM * BN; i += blockDim.x) {
    const int r = i / BN, c = i % BN, gm = m0 + r, gn = n0 + c;
    if (gm >= M || gn >= N) continue;
    if (slice) {
      slice[static_cast<std::int64_t>(gm) * N + gn] = Cs[r][c];
      continue;
    }
    float& out = C[static_cast<std::int64_t>(gm) * ldc + gn];
    out = alpha * Cs[r][c] + (beta == 0.f ? 0.f : beta * out);
  }
#endif
}

// C = alpha * (sum of the slices, in slice order) + beta * C.
__global__ void split_k_sum_k(int M, int N, int slices, const float* __restrict__ partial, float alpha, float beta, float* __restrict__ C,
                              int ldc) {
  const std::int64_t mn = static_cast<std::int64_t>(M) * N;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < mn; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float sum = 0.f;
    for (int z = 0; z < slices; ++z) sum += partial[z * mn + i];
    float& out = C[(i / N) * ldc + i % N];
    out = alpha * sum + (beta == 0.f ? 0.f : beta * out);
  }
}

// A slice shorter than this spends more on writing and summing its partial tile than it saves.
constexpr int kMinSliceK = 512;
constexpr int kMaxSlices = 32;

}  // namespace

int gemm_tc_split_slices(int M, int N, int K, int sms) {
  if (M <= 0 || N <= 0 || K <= 0 || sms <= 0) return 1;
  const std::int64_t tiles = static_cast<std::int64_t>((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  if (tiles >= sms) return 1;
  // Enough blocks for two per SM, no slice under kMinSliceK, and the slices' K rounded to whole tiles.
  const std::int64_t by_fill = (2 * static_cast<std::int64_t>(sms) + tiles - 1) / tiles;
  const std::int64_t by_k = K / kMinSliceK;
  const int wanted = static_cast<int>(std::min<std::int64_t>({by_fill, by_k, kMaxSlices}));
  if (wanted < 2) return 1;
  const int k_len = ((K + wanted - 1) / wanted + BK - 1) / BK * BK;
  return (K + k_len - 1) / k_len;
}

void gemm_tc(bool half_not_bf16, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
             int ldb, float beta, float* C, int ldc, cudaStream_t s, int slices, float* workspace) {
  if (M <= 0 || N <= 0) return;
  if (slices > 1 && !workspace) TB_THROW(ErrorCode::Internal, "gemm_tc: " + std::to_string(slices) + " K slices need a workspace");
  // Whole tiles per slice; a slice past K (from rounding) would only add zeros, so the count is recomputed.
  const int k_len = slices > 1 ? ((K + slices - 1) / slices + BK - 1) / BK * BK : std::max(K, 1);
  const int z = slices > 1 ? (K + k_len - 1) / k_len : 1;
  float* partial = z > 1 ? workspace : nullptr;
  const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM, z);
  if (half_not_bf16) TB_LAUNCH(gemm_tc_k<__half>, grid, 128, 0, s)(trans_a, trans_b, M, N, K, k_len, alpha, A, lda, B, ldb, beta, C, ldc, partial);
  else TB_LAUNCH(gemm_tc_k<__nv_bfloat16>, grid, 128, 0, s)(trans_a, trans_b, M, N, K, k_len, alpha, A, lda, B, ldb, beta, C, ldc, partial);
  TB_CUDA_LAUNCH_CHECK();
  if (!partial) return;
  const std::int64_t mn = static_cast<std::int64_t>(M) * N;
  const int blocks = static_cast<int>(std::min<std::int64_t>((mn + 255) / 256, 4096));
  TB_LAUNCH(split_k_sum_k, blocks, 256, 0, s)(M, N, z, partial, alpha, beta, C, ldc);
  TB_CUDA_LAUNCH_CHECK();
}

}  // namespace tb::cuda
