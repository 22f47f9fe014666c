// Losses with their gradient in one pass (the softmax is needed by both).
// Log-sum-exp is computed in double, shifted by the row max; the float soft-target loss (the board
// network's 1496-way policy) takes each exp once, in float, vectorised, and sums in double.
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "cpu/ops.h"
#include "cpu/simd_clones.h"

namespace tb {
namespace {

// e^x for x <= 0 in float: 2^n e^r with n = round(x / ln 2), |r| <= ln 2 / 2, a degree-6 Taylor
// polynomial (relative error below 2e-7) and n put into the exponent bits. Plain arithmetic, so
// loops over it vectorise; below -87 it returns e^-87 (about 1.6e-38), not a denormal.
TB_ALWAYS_INLINE inline float exp_nonpositive(float x) {
  x = x < -87.0f ? -87.0f : x;
  const float n = (x * 1.44269504f + 12582912.0f) - 12582912.0f;  // round to nearest
  const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f;    // x - n ln 2, ln 2 split in two
  const float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

// One soft-target row in float: returns the row's loss sum_k t_k (lse - z_k) and writes
// d_k = coef (softmax_k * sum(t) - t_k) when d is not null. e is K floats of scratch.
TB_SIMD_CLONES double soft_row_float(float* d, const float* z, const float* t, int K, double coef, float* e) {
  float m = z[0];
  for (int k = 1; k < K; ++k) m = z[k] > m ? z[k] : m;
  constexpr int L = 16;
  float se[L] = {}, st[L] = {}, stz[L] = {};
  int k = 0;
  for (; k + L <= K; k += L)
    for (int l = 0; l < L; ++l) {
      const float v = exp_nonpositive(z[k + l] - m);
      e[k + l] = v;
      se[l] += v;
      st[l] += t[k + l];
      stz[l] += t[k + l] * (z[k + l] - m);
    }
  double sum_e = 0, tsum = 0, tz = 0;
  for (; k < K; ++k) {
    e[k] = exp_nonpositive(z[k] - m);
    sum_e += e[k];
    tsum += t[k];
    tz += t[k] * (z[k] - m);
  }
  for (int l = 0; l < L; ++l) {
    sum_e += se[l];
    tsum += st[l];
    tz += stz[l];
  }
  const double lse_shifted = std::log(sum_e);  // log-sum-exp minus m
  if (d) {
    const float a = static_cast<float>(coef * tsum / sum_e), c = static_cast<float>(coef);
    for (int j = 0; j < K; ++j) d[j] = a * e[j] - c * t[j];
  }
  return tsum * lse_shifted - tz;
}

template <typename T>
double log_softmax_row(const T* z, int K, double* max_out) {
  double m = z[0];
  for (int k = 1; k < K; ++k) m = std::fmax(m, static_cast<double>(z[k]));
  double s = 0;
  for (int k = 0; k < K; ++k) s += std::exp(z[k] - m);
  *max_out = m;
  return m + std::log(s);  // log-sum-exp
}

}  // namespace

template <typename T>
double softmax_ce_forward_backward(T* dlogits, const T* logits, const std::int32_t* labels, int B, int K,
                                   double grad_scale, std::int64_t* correct) {
  double loss = 0;
  std::int64_t hits = 0;
  for (int b = 0; b < B; ++b) {
    const int y = labels[b];
    if (y < 0 || y >= K) {
      TB_THROW(ErrorCode::BadInput, "label " + std::to_string(y) + " of sample " + std::to_string(b) +
                                        " is outside [0, " + std::to_string(K) + ")");
    }
    const T* z = logits + static_cast<std::int64_t>(b) * K;
    double m;
    const double lse = log_softmax_row(z, K, &m);
    loss += lse - z[y];
    int arg = 0;
    for (int k = 1; k < K; ++k)
      if (z[k] > z[arg]) arg = k;
    hits += arg == y;
    if (dlogits) {
      T* d = dlogits + static_cast<std::int64_t>(b) * K;
      for (int k = 0; k < K; ++k) d[k] = static_cast<T>((std::exp(z[k] - lse) - (k == y ? 1.0 : 0.0)) * grad_scale / B);
    }
  }
  if (correct) *correct += hits;
  return loss / B;
}

template <typename T>
double softmax_ce_soft_forward_backward(T* dlogits, const T* logits, const T* targets, const T* mask, int B, int K,
                                        double grad_scale) {
  double count = 0;
  for (int b = 0; b < B; ++b) count += mask ? static_cast<double>(mask[b]) : 1.0;
  double loss = 0;
  for (int b = 0; b < B; ++b) {
    const T* z = logits + static_cast<std::int64_t>(b) * K;
    const T* t = targets + static_cast<std::int64_t>(b) * K;
    const double w = mask ? static_cast<double>(mask[b]) : 1.0;
    T* d = dlogits ? dlogits + static_cast<std::int64_t>(b) * K : nullptr;
    if (w == 0.0 || count == 0.0) {
      if (d)
        for (int k = 0; k < K; ++k) d[k] = T(0);
      continue;
    }
    if constexpr (std::is_same_v<T, float>) {
      thread_local std::vector<float> e;
      e.resize(static_cast<size_t>(K));
      loss += w * soft_row_float(d, z, t, K, w * grad_scale / count, e.data());
      continue;
    }
    double m;
    const double lse = log_softmax_row(z, K, &m);
    double tsum = 0, row = 0;
    for (int k = 0; k < K; ++k) {
      tsum += t[k];
      row += t[k] * (lse - z[k]);
    }
    loss += w * row;
    if (d)
      for (int k = 0; k < K; ++k) d[k] = static_cast<T>(w * (std::exp(z[k] - lse) * tsum - t[k]) * grad_scale / count);
  }
  return count > 0 ? loss / count : 0.0;
}

template <typename T>
double bce_logits_forward_backward(T* dlogits, const T* logits, const T* targets, int B, double grad_scale) {
  double loss = 0;
  for (int b = 0; b < B; ++b) {
    const double x = logits[b], t = targets[b];
    // max(x, 0) - x t + log(1 + e^-|x|): stable for large |x|
    loss += std::fmax(x, 0.0) - x * t + std::log1p(std::exp(-std::fabs(x)));
    if (dlogits) dlogits[b] = static_cast<T>((1.0 / (1.0 + std::exp(-x)) - t) * grad_scale / B);
  }
  return loss / B;
}

template <typename T>
double mse_forward_backward(T* dpred, const T* pred, const T* target, std::int64_t n, double grad_scale) {
  double loss = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double e = static_cast<double>(pred[i]) - target[i];
    loss += e * e;
    if (dpred) dpred[i] = static_cast<T>(2.0 * e * grad_scale / n);
  }
  return loss / n;
}

#define TB_INSTANTIATE(T)                                                                                        \
  template double softmax_ce_forward_backward<T>(T*, const T*, const std::int32_t*, int, int, double,            \
                                                 std::int64_t*);                                                 \
  template double softmax_ce_soft_forward_backward<T>(T*, const T*, const T*, const T*, int, int, double);        \
  template double bce_logits_forward_backward<T>(T*, const T*, const T*, int, double);                           \
  template double mse_forward_backward<T>(T*, const T*, const T*, std::int64_t, double);
TB_INSTANTIATE(float)
TB_INSTANTIATE(double)
#undef TB_INSTANTIATE

}  // namespace tb
