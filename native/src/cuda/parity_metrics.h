// How the GPU parity checks measure error, in plain C++ (no CUDA) so the rules
// themselves are tested on machines without a GPU (test/native/cuda-parity-host.test.ts).
// Every aggregate propagates NaN: a kernel that writes NaN must fail its check,
// and std::max(worst, NaN) would quietly keep `worst`.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <vector>

namespace tb::parity {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// fp32's unit roundoff, 2^-24: one rounding moves a value by at most this fraction of itself.
constexpr double kFp32Unit = 1.0 / 16777216.0;

// The larger error; NaN when either is NaN.
inline double worse(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b); }

inline double worst(std::initializer_list<double> errors) {
  double w = 0;
  for (double e : errors) w = worse(w, e);
  return w;
}

// An error and the bound it must stay under; NaN never passes (NaN <= x is false).
struct Score {
  double error = 0, tolerance = 0;
};
inline bool passes(const Score& s) { return s.error <= s.tolerance; }

// Several outputs of one check, each against its own bound: the worst ratio error / tolerance, to stay under 1.
inline Score worst_ratio(std::initializer_list<Score> parts) {
  double w = 0;
  for (const Score& s : parts) w = worse(w, s.error / s.tolerance);
  return {w, 1.0};
}

// max |a - b| / max(|a| + |b|, 1e-3): for results of a few roundings and no long accumulation.
inline double max_rel(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return kNaN;
  double w = 0;
  for (size_t i = 0; i < a.size(); ++i)
    w = worse(w, std::fabs(static_cast<double>(a[i]) - b[i]) / std::max(static_cast<double>(std::fabs(a[i]) + std::fabs(b[i])), 1e-3));
  return w;
}

// ||got - want|| / ||want||: for reduced-precision results, where single near-zero entries say little.
inline double norm_rel(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return kNaN;
  double d = 0, w = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    d += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    w += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(d / std::max(w, 1e-30));  // NaN in d stays NaN
}

// A reference computed in double, and per element the magnitude its rounding errors scale with: the sum
// of |terms| (the same computation on absolute values), not |result|, which cancellation can make ~0.
struct Reference {
  std::vector<double> value, scale;
};

// max_i |got_i - value_i| / scale_i. With scale from Reference, a correct fp32 computation stays under
// accumulation_tolerance(n) whatever its summation order (split K, tiles, FMA contraction).
inline double max_scaled(const std::vector<float>& got, const Reference& ref) {
  if (got.size() != ref.value.size()) return kNaN;
  double w = 0;
  for (size_t i = 0; i < got.size(); ++i)
    w = worse(w, std::fabs(static_cast<double>(got[i]) - ref.value[i]) / std::max(ref.scale[i], std::numeric_limits<double>::min()));
  return w;
}

// The bound on fp32 rounding error of a value built from `roundings` successive roundings (a sum of n
// products: n + 1), relative to the sum of |terms|: gamma_n = n u / (1 - n u) (Higham, Accuracy and
// Stability of Numerical Algorithms, §3.1). It holds for every order of summation.
inline double accumulation_tolerance(std::int64_t roundings) {
  const double nu = static_cast<double>(roundings) * kFp32Unit;
  return nu / (1.0 - nu);
}

// Row-major C (M, N) = alpha op(A) op(B) + beta C in double, as the GPU GEMMs are called (lda/ldb of the stored layout).
inline Reference gemm_reference(bool ta, bool tb, int M, int N, int K, double alpha, const std::vector<float>& A, int lda,
                                const std::vector<float>& B, int ldb, double beta, const std::vector<float>& C) {
  Reference r;
  r.value.assign(static_cast<size_t>(M) * N, 0.0);
  r.scale.assign(r.value.size(), 0.0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0, a = 0;
      for (int k = 0; k < K; ++k) {
        const double x = ta ? A[static_cast<size_t>(k) * lda + i] : A[static_cast<size_t>(i) * lda + k];
        const double y = tb ? B[static_cast<size_t>(j) * ldb + k] : B[static_cast<size_t>(k) * ldb + j];
        s += x * y;
        a += std::fabs(x * y);
      }
      const size_t at = static_cast<size_t>(i) * N + j;
      const double c = C.empty() ? 0.0 : C[at];
      r.value[at] = alpha * s + beta * c;
      r.scale[at] = std::fabs(alpha) * a + std::fabs(beta * c);
    }
  return r;
}

}  // namespace tb::parity
