// GEMM kernel lab: validates the engine's float GEMM against the double
// reference for every transpose combination and odd sizes, then times it.
//   build/tb_gemm_lab [threads]
// The numbers that matter are reported by `npm run bench:cpu`; this is the
// place to try a new micro-kernel before it moves into native/src/cpu.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/rng.h"
#include "core/threads.h"
#include "cpu/gemm.h"

using namespace tb;

static double max_rel_error(int M, int N, int K, bool ta, bool tb, ThreadPool* pool) {
  Rng rng(42);
  std::vector<float> A(static_cast<size_t>(M) * K), B(static_cast<size_t>(K) * N), C(static_cast<size_t>(M) * N);
  std::vector<double> Ad(A.size()), Bd(B.size()), Cd(C.size());
  for (size_t i = 0; i < A.size(); ++i) Ad[i] = A[i] = static_cast<float>(rng.uniform(-1, 1));
  for (size_t i = 0; i < B.size(); ++i) Bd[i] = B[i] = static_cast<float>(rng.uniform(-1, 1));
  for (size_t i = 0; i < C.size(); ++i) Cd[i] = C[i] = static_cast<float>(rng.uniform(-1, 1));
  const int lda = ta ? M : K, ldb = tb ? K : N;
  gemm(ta, tb, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, 0.25f, C.data(), N, pool);
  gemm(ta, tb, M, N, K, 0.5, Ad.data(), lda, Bd.data(), ldb, 0.25, Cd.data(), N, nullptr);
  double worst = 0;
  for (size_t i = 0; i < C.size(); ++i) worst = std::fmax(worst, std::fabs(C[i] - Cd[i]) / (std::fabs(Cd[i]) + 1.0));
  return worst;
}

static double gflops(int M, int N, int K, ThreadPool* pool) {
  std::vector<float> A(static_cast<size_t>(M) * K, 0.5f), B(static_cast<size_t>(K) * N, 0.25f), C(static_cast<size_t>(M) * N);
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    gemm(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, C.data(), N, pool);
    best = std::fmin(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * M * N * K / best / 1e9;
}

int main(int argc, char** argv) {
  ThreadPool pool(argc > 1 ? std::atoi(argv[1]) : 0);
  std::printf("kernel %s, %d threads\n", gemm_kernel_name().c_str(), pool.size());
  bool ok = true;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (auto s : {std::vector<int>{1, 1, 1}, {7, 13, 5}, {67, 45, 300}, {130, 33, 513}}) {
        const double err = max_rel_error(s[0], s[1], s[2], ta, tb, &pool);
        const bool pass = err < 1e-5;
        ok &= pass;
        std::printf("check ta=%d tb=%d %dx%dx%d max rel err %.2e %s\n", ta, tb, s[0], s[1], s[2], err, pass ? "ok" : "FAIL");
      }
  for (auto s : {std::vector<int>{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {64, 50176, 288}, {256, 2048, 784}})
    std::printf("%5d x %5d x %5d  %7.1f GFLOP/s\n", s[0], s[1], s[2], gflops(s[0], s[1], s[2], &pool));
  return ok ? 0 : 1;
}
