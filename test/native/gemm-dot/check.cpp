// The float GEMM's dot-kernel path (C = A . B^T with a long reduction, cpu/gemm.cpp gemm_dot: the
// convolutions' weight gradients) against a double reference: odd row and column counts (tile
// edges), reductions that are not a multiple of the vector width or of the k block, beta 0 and not,
// leading dimensions wider than the rows; and the same bits with 1 and 2 threads.
// Prints the worst error; exits 1 on a mismatch.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/rng.h"
#include "core/threads.h"
#include "cpu/gemm.h"

using namespace tb;

int main() {
  ThreadPool one(1), two(2);
  Rng rng(15);
  struct Case {
    int M, N, K;
    float beta;
  };
  const Case cases[] = {{1, 1, 1024, 0.0f},  {5, 7, 1031, 0.5f},   {24, 216, 20736, 0.0f}, {13, 9, 9000, 1.0f},
                        {130, 33, 2049, 0.25f}, {4, 6, 1024 + 15, 0.0f}, {96, 24, 5000, 1.0f}};
  double worst = 0;
  for (const Case& c : cases) {
    const int lda = c.K + 3, ldb = c.K + 5, ldc = c.N + 2;
    std::vector<float> A(static_cast<size_t>(c.M) * lda), B(static_cast<size_t>(c.N) * ldb),
        C0(static_cast<size_t>(c.M) * ldc);
    for (auto& v : A) v = static_cast<float>(rng.uniform(-1, 1));
    for (auto& v : B) v = static_cast<float>(rng.uniform(-1, 1));
    for (auto& v : C0) v = static_cast<float>(rng.uniform(-1, 1));
    std::vector<float> C1 = C0, C2 = C0;
    gemm(false, true, c.M, c.N, c.K, 0.75f, A.data(), lda, B.data(), ldb, c.beta, C1.data(), ldc, &one);
    gemm(false, true, c.M, c.N, c.K, 0.75f, A.data(), lda, B.data(), ldb, c.beta, C2.data(), ldc, &two);
    if (std::memcmp(C1.data(), C2.data(), C1.size() * sizeof(float)) != 0) {
      std::printf("MISMATCH %dx%dx%d: 1 and 2 threads differ\n", c.M, c.N, c.K);
      return 1;
    }
    for (int i = 0; i < c.M; ++i)
      for (int j = 0; j < ldc; ++j) {
        const size_t ci = static_cast<size_t>(i) * ldc + j;
        double want = C0[ci];  // columns past N are left alone
        if (j < c.N) {
          double s = 0;
          for (int k = 0; k < c.K; ++k)
            s += static_cast<double>(A[static_cast<size_t>(i) * lda + k]) * B[static_cast<size_t>(j) * ldb + k];
          want = 0.75 * s + (c.beta == 0.0f ? 0.0 : c.beta * static_cast<double>(C0[ci]));
        }
        const double err = std::fabs(C1[ci] - want) / (std::fabs(want) + 1.0);
        worst = std::fmax(worst, err);
        if (!(err < 1e-4)) {
          std::printf("MISMATCH %dx%dx%d beta %g at (%d, %d): %g, want %g\n", c.M, c.N, c.K, c.beta, i, j, C1[ci], want);
          return 1;
        }
      }
  }
  std::printf("checked %zu products: worst relative error %.2e\n", sizeof(cases) / sizeof(cases[0]), worst);
  return 0;
}
