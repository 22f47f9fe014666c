// Row-major GEMM: C = alpha * op(A) * op(B) + beta * C, with op(X) = X or X^T.
//   op(A) is (M, K), op(B) is (K, N), C is (M, N); lda/ldb/ldc are row strides.
// float runs the packed, cache-blocked, multithreaded kernel; double runs a
// plain reference loop (used by the finite-difference gradient checks).
#pragma once
#include <cstdint>
#include <string>

namespace tb {

class ThreadPool;

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
          int ldb, float beta, float* C, int ldc, ThreadPool* pool);

void gemm(bool trans_a, bool trans_b, int M, int N, int K, double alpha, const double* A, int lda, const double* B,
          int ldb, double beta, double* C, int ldc, ThreadPool* pool);

// Which micro-kernel the float path uses on this CPU ("avx512", "avx2" or "generic"),
// and its floating-point lanes per instruction, for peak estimates.
std::string gemm_kernel_name();
int gemm_kernel_lanes();

}  // namespace tb
