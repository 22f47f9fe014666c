// The fp32 GEMM (shared-memory tiles) and the aligned bf16 tensor-core GEMM, as cpu/gemm.cpp; the
// mixed-precision kernel with split-K is gemm_tc.cu, and gemm_engine.cu picks a path per shape.
#include <mma.h>

#include <string>

#include "core/errors.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels.h"

namespace tb::cuda {
namespace {

constexpr int TILE = 32;

// One 32x32 tile of C per block, K walked in 32-wide slices through shared
// memory. Transposes are handled in the loads, so all four cases share code.
__global__ void gemm_f32_k(bool ta, bool tb, int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                           const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc) {
  __shared__ float As[TILE][TILE + 1];
  __shared__ float Bs[TILE][TILE + 1];
  const int row = blockIdx.y * TILE + threadIdx.y;
  const int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    const int ak = k0 + threadIdx.x;  // A tile: (row, ak)
    const int bk = k0 + threadIdx.y;  // B tile: (bk, col)
    As[threadIdx.y][threadIdx.x] =
        (row < M && ak < K) ? (ta ? A[static_cast<std::int64_t>(ak) * lda + row] : A[static_cast<std::int64_t>(row) * lda + ak]) : 0.f;
    Bs[threadIdx.y][threadIdx.x] =
        (bk < K && col < N) ? (tb ? B[static_cast<std::int64_t>(col) * ldb + bk] : B[static_cast<std::int64_t>(bk) * ldb + col]) : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) {
    float& c = C[static_cast<std::int64_t>(row) * ldc + col];
    c = alpha * acc + (beta == 0.f ? 0.f : beta * c);
  }
}

// Each warp computes one 16x16 tile with bf16 tensor-core fragments, fp32 accumulation.
__global__ void gemm_bf16_tc_k(int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* B, float* C) {
#if TB_HAS_WMMA
  using namespace nvcuda;
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
  const int tiles_n = N / 16;
  const int tile_m = warp / tiles_n, tile_n = warp % tiles_n;
  if (tile_m * 16 >= M) return;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
  wmma::fill_fragment(c, 0.f);
  for (int k = 0; k < K; k += 16) {
    wmma::load_matrix_sync(a, A + static_cast<std::int64_t>(tile_m) * 16 * K + k, K);
    wmma::load_matrix_sync(b, B + static_cast<std::int64_t>(k) * N + tile_n * 16, N);
    wmma::mma_sync(c, a, b, c);
  }
  wmma::store_matrix_sync(C + static_cast<std::int64_t>(tile_m) * 16 * N + tile_n * 16, c, N, wmma::mem_row_major);
#endif
}

}  // namespace

void gemm_f32(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
              float beta, float* C, int ldc, cudaStream_t s) {
  if (M <= 0 || N <= 0) return;
  const dim3 block(TILE, TILE);
  const dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
  TB_LAUNCH(gemm_f32_k, grid, block, 0, s)(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  TB_CUDA_LAUNCH_CHECK();
}

void gemm_bf16_tc(int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* B, float* C, cudaStream_t s) {
  if (M % 16 || N % 16 || K % 16) {
    TB_THROW(ErrorCode::BadInput, "gemm_bf16_tc needs M, N, K multiples of 16, got " + std::to_string(M) + "x" +
                                      std::to_string(N) + "x" + std::to_string(K));
  }
  const int warps = (M / 16) * (N / 16);
  const int threads = 128;  // 4 warps per block
  const int blocks = (warps * 32 + threads - 1) / threads;
  TB_LAUNCH(gemm_bf16_tc_k, blocks, threads, 0, s)(M, N, K, A, B, C);
  TB_CUDA_LAUNCH_CHECK();
}

}  // namespace tb::cuda
