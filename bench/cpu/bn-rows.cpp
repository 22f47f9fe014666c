// Batch norm timed on channels-last rows (x is (M, C) row-major: batchnorm_*(N = M, C, HW = 1)) and on
// the same data channel-major (each channel one contiguous run: N = 1, HW = M), at the board
// network's shapes at batch 256 (M = batch x pixels, C = channels). Forward train and backward with
// a folded ReLU (relu_out), best of several repetitions, the two layouts alternating within each
// repetition so a shared machine's load hits both. GB/s counts the bytes each pass streams: forward
// reads x three times (mean, variance, normalise) and writes y (16 bytes per value); backward reads
// dy, relu_out and x twice (sums, then din) and writes din (28 bytes per value). Build against the engine:
//   g++ -O2 -std=c++17 -Inative/src bench/cpu/bn-rows.cpp build/libtb_engine.a -lpthread -o /tmp/bn-rows
//   /tmp/bn-rows [threads] [reps]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/rng.h"
#include "core/threads.h"
#include "cpu/ops.h"

using namespace tb;

struct Shape {
  const char* name;
  int M, C;
};

struct Buffers {
  std::vector<float> x, dy, relu, y, din, gamma, beta, rmean, rvar, mean, invstd, dgamma, dbeta;
};

// One layout's buffers: rows (M, C) or channel-major (C, M) holding the same values.
static Buffers make(const Shape& s, bool rows, Rng& rng) {
  const std::size_t n = static_cast<std::size_t>(s.M) * s.C;
  Buffers b;
  b.x.resize(n);
  b.dy.resize(n);
  b.relu.resize(n);
  b.y.resize(n);
  b.din.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    b.x[i] = static_cast<float>(rng.uniform(-1, 3));
    b.dy[i] = static_cast<float>(rng.uniform(-1, 1));
    b.relu[i] = static_cast<float>(std::fmax(0.0, rng.uniform(-1, 1)));
  }
  if (!rows) {
    // Same values, channel-major.
    for (auto* v : {&b.x, &b.dy, &b.relu}) {
      std::vector<float> t(n);
      for (int m = 0; m < s.M; ++m)
        for (int c = 0; c < s.C; ++c) t[static_cast<std::size_t>(c) * s.M + m] = (*v)[static_cast<std::size_t>(m) * s.C + c];
      v->swap(t);
    }
  }
  for (auto* v : {&b.gamma, &b.beta, &b.rmean, &b.mean, &b.invstd, &b.dgamma, &b.dbeta}) v->assign(s.C, 0.5f);
  b.rvar.assign(s.C, 1.0f);
  return b;
}

static double seconds(const std::chrono::steady_clock::time_point& t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Seconds for one forward train and one backward (with relu_out) in the given layout.
static void time_once(Buffers& b, const Shape& s, bool rows, ThreadPool* pool, double* fwd, double* bwd) {
  const int N = rows ? s.M : 1, HW = rows ? 1 : s.M;
  auto t0 = std::chrono::steady_clock::now();
  batchnorm_forward_train(b.y.data(), b.mean.data(), b.invstd.data(), b.x.data(), b.gamma.data(), b.beta.data(),
                          b.rmean.data(), b.rvar.data(), N, s.C, HW, 0.1f, 1e-5f, pool);
  *fwd = seconds(t0);
  t0 = std::chrono::steady_clock::now();
  batchnorm_backward(b.din.data(), b.dgamma.data(), b.dbeta.data(), b.dy.data(), b.x.data(), b.gamma.data(),
                     b.mean.data(), b.invstd.data(), N, s.C, HW, pool, b.relu.data());
  *bwd = seconds(t0);
}

int main(int argc, char** argv) {
  ThreadPool pool(argc > 1 ? std::atoi(argv[1]) : 2);
  const int reps = argc > 2 ? std::atoi(argv[2]) : 9;
  std::printf("batch norm, %d threads, best of %d; GB/s = bytes streamed / time (forward 16, backward 28 per value)\n",
              pool.size(), reps);
  std::printf("%-16s %8s | %9s %7s %9s %7s | %9s %7s %9s %7s\n", "shape (M x C)", "values", "rows fwd", "GB/s",
              "rows bwd", "GB/s", "chan fwd", "GB/s", "chan bwd", "GB/s");
  const Shape shapes[] = {{"20736 x 24", 20736, 24}, {"20736 x 96", 20736, 96}, {"6400 x 192", 6400, 192},
                          {"2304 x 384", 2304, 384}, {"1024 x 576", 1024, 576}};
  Rng rng(19);
  for (const Shape& s : shapes) {
    Buffers rows = make(s, true, rng), chan = make(s, false, rng);
    double best[4] = {1e30, 1e30, 1e30, 1e30};
    for (int r = 0; r < reps; ++r) {
      double f, b;
      time_once(rows, s, true, &pool, &f, &b);
      best[0] = std::fmin(best[0], f);
      best[1] = std::fmin(best[1], b);
      time_once(chan, s, false, &pool, &f, &b);
      best[2] = std::fmin(best[2], f);
      best[3] = std::fmin(best[3], b);
    }
    const double n = static_cast<double>(s.M) * s.C, per[4] = {16, 28, 16, 28};
    std::printf("%-16s %8.0f |", s.name, n);
    for (int i = 0; i < 4; ++i) std::printf(" %7.3fms %7.1f%s", best[i] * 1e3, per[i] * n / best[i] * 1e-9, i == 1 ? " |" : "");
    std::printf("\n");
  }
  return 0;
}
