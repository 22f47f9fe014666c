// The float GEMM's paths (cpu/gemm.cpp) against a double reference: the dot kernel (C = A . B^T
// with a long reduction: the convolutions' weight gradients) and the packed kernel for every
// transpose combination, C cut into tiles that threads share out. Odd row and column counts (tile edges),
// reductions that are not a multiple of the vector width or of the k block, beta 0 and not,
// leading dimensions wider than the rows; and the same bits with 1, 2 and 3 threads.
// Prints the worst error; exits 1 on a mismatch.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/rng.h"
#include "core/threads.h"
#include "cpu/gemm.h"

using namespace tb;

struct Case {
  bool ta, tb;
  int M, N, K;
  float beta;
};

int main() {
  std::printf("kernel %s\n", gemm_kernel_name().c_str());
  ThreadPool one(1), two(2), three(3);
  Rng rng(15);
  std::vector<Case> cases = {// the dot kernel: B transposed, K >= 1024
                             {false, true, 1, 1, 1024, 0.0f}, {false, true, 5, 7, 1031, 0.5f},
                             {false, true, 24, 216, 20736, 0.0f}, {false, true, 13, 9, 9000, 1.0f},
                             {false, true, 130, 33, 2049, 0.25f}, {false, true, 4, 6, 1024 + 15, 0.0f},
                             {false, true, 96, 24, 5000, 1.0f}};
  // the packed kernel: wide and narrow C, NC and KC block edges
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (const Case& c : {Case{false, false, 24, 3100, 300, 0.0f}, Case{false, false, 250, 10, 513, 1.0f},
                            Case{false, false, 7, 13, 5, 0.5f}, Case{false, false, 130, 97, 257, 0.0f}})
        cases.push_back({ta == 1, tb == 1, c.M, c.N, tb == 1 ? std::min(c.K, 1000) : c.K, c.beta});
  double worst = 0;
  for (const Case& c : cases) {
    const int lda = (c.ta ? c.M : c.K) + 3, ldb = (c.tb ? c.K : c.N) + 5, ldc = c.N + 2;
    std::vector<float> A(static_cast<size_t>(c.ta ? c.K : c.M) * lda), B(static_cast<size_t>(c.tb ? c.N : c.K) * ldb),
        C0(static_cast<size_t>(c.M) * ldc);
    for (auto& v : A) v = static_cast<float>(rng.uniform(-1, 1));
    for (auto& v : B) v = static_cast<float>(rng.uniform(-1, 1));
    for (auto& v : C0) v = static_cast<float>(rng.uniform(-1, 1));
    std::vector<float> C1 = C0;
    gemm(c.ta, c.tb, c.M, c.N, c.K, 0.75f, A.data(), lda, B.data(), ldb, c.beta, C1.data(), ldc, &one);
    for (ThreadPool* pool : {&two, &three}) {
      std::vector<float> Ct = C0;
      gemm(c.ta, c.tb, c.M, c.N, c.K, 0.75f, A.data(), lda, B.data(), ldb, c.beta, Ct.data(), ldc, pool);
      if (std::memcmp(C1.data(), Ct.data(), C1.size() * sizeof(float)) != 0) {
        std::printf("MISMATCH ta=%d tb=%d %dx%dx%d: 1 and %d threads differ\n", c.ta, c.tb, c.M, c.N, c.K, pool->size());
        return 1;
      }
    }
    for (int i = 0; i < c.M; ++i)
      for (int j = 0; j < ldc; ++j) {
        const size_t ci = static_cast<size_t>(i) * ldc + j;
        double want = C0[ci];  // columns past N are left alone
        if (j < c.N) {
          double s = 0;
          for (int k = 0; k < c.K; ++k)
            s += static_cast<double>(c.ta ? A[static_cast<size_t>(k) * lda + i] : A[static_cast<size_t>(i) * lda + k]) *
                 (c.tb ? B[static_cast<size_t>(j) * ldb + k] : B[static_cast<size_t>(k) * ldb + j]);
          want = 0.75 * s + (c.beta == 0.0f ? 0.0 : c.beta * static_cast<double>(C0[ci]));
        }
        const double err = std::fabs(C1[ci] - want) / (std::fabs(want) + 1.0);
        worst = std::fmax(worst, err);
        if (!(err < 1e-4)) {
          std::printf("MISMATCH ta=%d tb=%d %dx%dx%d beta %g at (%d, %d): %g, want %g\n", c.ta, c.tb, c.M, c.N, c.K,
                      c.beta, i, j, C1[ci], want);
          return 1;
        }
      }
  }
  std::printf("checked %zu products: worst relative error %.2e\n", cases.size(), worst);
  return 0;
}
