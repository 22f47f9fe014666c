// The engine's own tensor-core GEMM for mixed precision: fp32 operands are
// rounded to bf16 or fp16 as they are staged in shared memory (no separate
// cast pass, any shape, any transpose), multiplied with WMMA and accumulated
// in fp32. The always-available path; cuBLASLt is used instead where the
// per-shape timing says it is faster (gemm_engine.cu).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

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

// 128 threads: 4 warps in a 2x2 grid, each owning a 32x32 piece of the 64x64 tile.
template <typename T>
__global__ void __launch_bounds__(128) gemm_tc_k(bool ta, bool tb, int M, int N, int K, float alpha, const float* __restrict__ A,
                                                 int lda, const float* __restrict__ B, int ldb, float beta, float* __restrict__ C,
                                                 int ldc) {
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
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int i = threadIdx.x; i < BM * BK; i += blockDim.x) {
      const int r = i / BK, k = i % BK, gm = m0 + r, gk = k0 + k;
      const float v = gm < M && gk < K ? (ta ? A[static_cast<std::int64_t>(gk) * lda + gm] : A[static_cast<std::int64_t>(gm) * lda + gk]) : 0.f;
      As[r][k] = round_to<T>(v);
      const int kk = i / BN, nn = i % BN, gk2 = k0 + kk, gn = n0 + nn;
      const float w = gk2 < K && gn < N ? (tb ? B[static_cast<std::int64_t>(gn) * ldb + gk2] : B[static_cast<std::int64_t>(gk2) * ldb + gn]) : 0.f;
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
  for (int i = threadIdx.x; i < BM * BN; i += blockDim.x) {
    const int r = i / BN, c = i % BN, gm = m0 + r, gn = n0 + c;
    if (gm >= M || gn >= N) continue;
    float& out = C[static_cast<std::int64_t>(gm) * ldc + gn];
    out = alpha * Cs[r][c] + (beta == 0.f ? 0.f : beta * out);
  }
#endif
}

}  // namespace

void gemm_tc(bool half_not_bf16, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
             int ldb, float beta, float* C, int ldc, cudaStream_t s) {
  if (M <= 0 || N <= 0) return;
  const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  if (half_not_bf16) TB_LAUNCH(gemm_tc_k<__half>, grid, 128, 0, s)(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  else TB_LAUNCH(gemm_tc_k<__nv_bfloat16>, grid, 128, 0, s)(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  TB_CUDA_LAUNCH_CHECK();
}

}  // namespace tb::cuda
