// The engine's float GEMM timed on the products the board network's convolutions made at batch
// 256 when they ran as im2col GEMMs (channel-major: out (O, P) = W (O, K) . col (K, P), P = batch x
// pixels; they now run the indirect kernels of cpu/ops_conv.cpp, but the shapes still cover the
// GEMM's paths), and on the MLP's linear layers, forward, input gradient and weight gradient,
// checked against the double reference.
// Best of several repetitions, so a shared machine's load shows less. Build against the engine:
//   g++ -O2 -std=c++17 -Inative/src bench/cpu/gemm-shapes.cpp build/libtb_engine.a -lpthread -o /tmp/gemm-shapes
//   /tmp/gemm-shapes [threads] [reps]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/rng.h"
#include "core/threads.h"
#include "cpu/gemm.h"

using namespace tb;

struct Shape {
  const char* name;
  int O, K, P;
};

// C (M, N) = op(A) (M, K) . op(B) (K, N) on random data; returns the best seconds and checks a sample of C.
static double run(bool ta, bool tb, int M, int N, int K, ThreadPool* pool, int reps, double* err) {
  Rng rng(7);
  std::vector<float> A(static_cast<size_t>(M) * K), B(static_cast<size_t>(K) * N), C(static_cast<size_t>(M) * N);
  for (auto& v : A) v = static_cast<float>(rng.uniform(-1, 1));
  for (auto& v : B) v = static_cast<float>(rng.uniform(-1, 1));
  const int lda = ta ? M : K, ldb = tb ? K : N;
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    gemm(ta, tb, M, N, K, 1.0f, A.data(), lda, B.data(), ldb, 0.0f, C.data(), N, pool);
    best = std::fmin(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  *err = 0;
  for (int s = 0; s < 64; ++s) {
    const int i = (s * 7919) % M, j = (s * 104729) % N;
    double ref = 0;
    for (int k = 0; k < K; ++k)
      ref += static_cast<double>(ta ? A[static_cast<size_t>(k) * lda + i] : A[static_cast<size_t>(i) * lda + k]) *
             (tb ? B[static_cast<size_t>(j) * ldb + k] : B[static_cast<size_t>(k) * ldb + j]);
    *err = std::fmax(*err, std::fabs(C[static_cast<size_t>(i) * N + j] - ref) / (std::fabs(ref) + 1.0));
  }
  return best;
}

int main(int argc, char** argv) {
  ThreadPool pool(argc > 1 ? std::atoi(argv[1]) : 0);
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  std::printf("kernel %s, %d threads, best of %d\n", gemm_kernel_name().c_str(), pool.size(), reps);
  const Shape shapes[] = {{"stem 3x3 104->24 9x9", 24, 936, 20736},  {"s0 conv2 3x3 24 9x9", 24, 216, 20736},
                          {"s0 conv3 1x1 24->96", 96, 24, 20736},   {"s0 conv1 1x1 96->24", 24, 96, 20736},
                          {"s1 conv3 1x1 48->192", 192, 48, 6400},  {"s2 conv2 3x3 96 3x3", 96, 864, 2304},
                          {"s3 conv3 1x1 144->576", 576, 144, 1024}, {"head 3x3 576->128 2x2", 128, 5184, 1024}};
  const Shape mlp[] = {{"mlp fc1 784->256", 256, 784, 256}, {"mlp fc2 256->128", 128, 256, 256}};
  double total = 0;
  bool ok = true;
  for (const Shape& s : shapes) {
    double e1, e2, e3;
    const double fwd = run(false, false, s.O, s.P, s.K, &pool, reps, &e1);
    const double din = run(true, false, s.K, s.P, s.O, &pool, reps, &e2);
    const double dw = run(false, true, s.O, s.K, s.P, &pool, reps, &e3);
    const double gf = 2.0 * s.O * s.K * s.P / 1e9;
    total += fwd + din + dw;
    const double err = std::fmax(e1, std::fmax(e2, e3));
    ok &= err < 1e-4;
    std::printf("%-24s fwd %6.1f  din %6.1f  dweight %6.1f GFLOP/s  (%.2f ms total, max rel err %.1e)\n", s.name,
                gf / fwd, gf / din, gf / dw, (fwd + din + dw) * 1e3, err);
  }
  std::printf("total %.2f ms\n", total * 1e3);
  // The MLP's linear layers, batch-major: out (B, O) = in (B, I) . W^T, dW (O, I) = dout^T . in, din = dout . W.
  double mtotal = 0;
  for (const Shape& s : mlp) {
    double e1, e2, e3;
    const double fwd = run(false, true, s.P, s.O, s.K, &pool, reps, &e1);
    const double dw = run(true, false, s.O, s.K, s.P, &pool, reps, &e2);
    const double din = run(false, false, s.P, s.K, s.O, &pool, reps, &e3);
    const double gf = 2.0 * s.O * s.K * s.P / 1e9;
    mtotal += fwd + din + dw;
    std::printf("%-24s fwd %6.1f  din %6.1f  dweight %6.1f GFLOP/s\n", s.name, gf / fwd, gf / din, gf / dw);
  }
  std::printf("mlp total %.3f ms\n", mtotal * 1e3);
  return ok ? 0 : 1;
}
