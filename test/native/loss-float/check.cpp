// The float soft-target cross-entropy (cpu/ops_loss.cpp: one vectorised float exp per logit)
// against the double path (std::exp in double) on the board policy's shape and on edge shapes:
// one class, fewer classes than a vector, logits spread over +-80 (exps that underflow float),
// masked rows, targets that do not sum to 1. Prints the worst errors; exits 1 past 1e-5.
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/rng.h"
#include "cpu/ops.h"

using namespace tb;

int main() {
  Rng rng(11);
  struct Shape {
    int B, K;
    double spread;
    bool mask;
  };
  const Shape shapes[] = {{1, 1, 3, false}, {3, 7, 5, false}, {5, 17, 80, true}, {256, 1496, 20, false}, {64, 1496, 80, true}};
  double worst_loss = 0, worst_grad = 0;
  for (const Shape& s : shapes) {
    const size_t n = static_cast<size_t>(s.B) * s.K;
    std::vector<float> z(n), t(n, 0.0f), m(s.B), d(n);
    std::vector<double> zd(n), td(n, 0.0), md(s.B), dd(n);
    for (size_t i = 0; i < n; ++i) zd[i] = z[i] = static_cast<float>(rng.uniform(-s.spread, s.spread));
    for (int b = 0; b < s.B; ++b) {
      for (int j = 0; j < 2; ++j) {
        const size_t i = static_cast<size_t>(b) * s.K + rng.below(static_cast<std::uint64_t>(s.K));
        t[i] += j == 0 ? 1.0f : 0.25f;
        td[i] = t[i];
      }
      md[b] = m[b] = s.mask && b % 3 == 1 ? 0.0f : 1.0f;
    }
    const double lf = softmax_ce_soft_forward_backward<float>(d.data(), z.data(), t.data(), s.mask ? m.data() : nullptr, s.B, s.K, 2.0);
    const double ld = softmax_ce_soft_forward_backward<double>(dd.data(), zd.data(), td.data(), s.mask ? md.data() : nullptr, s.B, s.K, 2.0);
    double gmax = 0, gerr = 0;
    for (size_t i = 0; i < n; ++i) gmax = std::fmax(gmax, std::fabs(dd[i]));
    for (size_t i = 0; i < n; ++i) gerr = std::fmax(gerr, std::fabs(d[i] - dd[i]) / (gmax + 1e-30));
    const double lerr = std::fabs(lf - ld) / (std::fabs(ld) + 1e-12);
    std::printf("B=%d K=%d spread %.0f mask %d: loss %.8g (double %.8g, rel %.1e), gradient rel to its max %.1e\n", s.B, s.K,
                s.spread, s.mask, lf, ld, lerr, gerr);
    if (!(lerr < 1e-5) || !(gerr < 1e-5)) {
      std::printf("MISMATCH\n");
      return 1;
    }
    worst_loss = std::fmax(worst_loss, lerr);
    worst_grad = std::fmax(worst_grad, gerr);
  }
  std::printf("checked %zu shapes: worst loss error %.1e, gradient %.1e\n", sizeof shapes / sizeof shapes[0], worst_loss, worst_grad);
  return 0;
}
