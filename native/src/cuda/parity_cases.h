// The inputs and the scoring of the parity checks whose tolerances depend on
// how the device accumulates (GEMMs, convolution, widening, batch norm),
// in plain C++: cuda_parity.cu runs them on the GPU, and
// test/native/cuda-parity-host.test.ts replays the same cases on the host with
// the device's arithmetic, so the tolerances are proven where no GPU exists.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"
#include "cpu/ops.h"
#include "cuda/parity_metrics.h"

namespace tb::parity {

inline std::vector<float> random_vec(Rng& rng, std::int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<float>(rng.uniform(0.1, 1.0) * (rng.uniform() < 0.5 ? -1 : 1));
  return v;
}

inline int pick(Rng& r, int lo, int hi) { return lo + static_cast<int>(r.below(static_cast<std::uint64_t>(hi - lo + 1))); }

// Every op draws its case from its own stream, derived from the seed and the op's name.
inline Rng case_rng(const std::string& op, std::uint64_t seed) {
  std::uint64_t label = 1469598103934665603ull;  // FNV-1a of the name
  for (unsigned char c : op) label = (label ^ c) * 1099511628211ull;
  return Rng::derive(seed, label);
}

// ---- GEMM: row-major C (M, N) = alpha op(A) op(B) + beta C, any transpose, odd shapes.
struct GemmCase {
  bool ta = false, tb = false;
  int M = 0, N = 0, K = 0, lda = 0, ldb = 0;
  float alpha = 0.7f, beta = 0.3f;
  std::vector<float> A, B, C;
  std::string shapes() const {
    return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + (ta ? " A^T" : "") + (tb ? " B^T" : "");
  }
};

// Sizes are multiples of `multiple` (8 keeps 16-bit operands 16-byte aligned, which every cuBLASLt
// algorithm accepts); 1 gives the odd shapes where tiled kernels go wrong.
inline GemmCase gemm_case(Rng& rng, int max_m, int max_n, int max_k, int multiple = 1) {
  GemmCase c;
  c.ta = rng.uniform() < 0.5;
  c.tb = rng.uniform() < 0.5;
  c.M = multiple * pick(rng, 1, max_m / multiple);
  c.N = multiple * pick(rng, 1, max_n / multiple);
  c.K = multiple * pick(rng, 1, max_k / multiple);
  c.A = random_vec(rng, static_cast<std::int64_t>(c.M) * c.K);
  c.B = random_vec(rng, static_cast<std::int64_t>(c.K) * c.N);
  c.C = random_vec(rng, static_cast<std::int64_t>(c.M) * c.N);
  c.lda = c.ta ? c.M : c.K;
  c.ldb = c.tb ? c.K : c.N;
  return c;
}

// fp32 against the exact product: K products, K - 1 additions, alpha, beta and the final add.
inline Score gemm_f32_score(const GemmCase& c, const std::vector<float>& got) {
  const Reference ref = gemm_reference(c.ta, c.tb, c.M, c.N, c.K, c.alpha, c.A, c.lda, c.B, c.ldb, c.beta, c.C);
  return {max_scaled(got, ref), accumulation_tolerance(c.K + 3)};
}

// ---- convolution as the GPU runs it: im2col + GEMM forward; GEMMs + col2im backward.
struct ConvCase {
  ConvGeom g{};
  std::vector<float> x, w, dy;  // x (N, C, H, W), w (O, C*KH*KW), dy (N, O, OH*OW)
  std::string shapes() const {
    return "N,C,H=" + std::to_string(g.N) + "x" + std::to_string(g.C) + "x" + std::to_string(g.H) + " O=" + std::to_string(g.O) +
           " k=" + std::to_string(g.KH) + " s=" + std::to_string(g.stride);
  }
};

inline ConvCase conv_case(Rng& rng) {
  ConvCase c;
  ConvGeom& g = c.g;
  g.N = pick(rng, 1, 8);
  g.C = pick(rng, 1, 16);
  g.H = g.W = pick(rng, 3, 12);
  g.O = pick(rng, 1, 24);
  g.stride = pick(rng, 1, 2);
  g.KH = g.KW = rng.uniform() < 0.5 ? 1 : 3;
  g.pad = g.KH / 2;
  const std::int64_t ohw = static_cast<std::int64_t>(g.OH()) * g.OW();
  c.x = random_vec(rng, static_cast<std::int64_t>(g.N) * g.C * g.H * g.W);
  c.w = random_vec(rng, static_cast<std::int64_t>(g.O) * g.C * g.KH * g.KW);
  c.dy = random_vec(rng, g.N * g.O * ohw);
  return c;
}

// y, dW and dx in double, with their term magnitudes (the same sums over |x|, |w|, |dy|).
struct ConvReference {
  Reference y, dw, dx;
};

inline ConvReference conv_reference(const ConvCase& c) {
  const ConvGeom& g = c.g;
  const int OH = g.OH(), OW = g.OW(), taps = g.C * g.KH * g.KW;
  ConvReference r;
  auto zeros = [](Reference& ref, size_t n) { ref.value.assign(n, 0.0), ref.scale.assign(n, 0.0); };
  zeros(r.y, c.dy.size());
  zeros(r.dw, c.w.size());
  zeros(r.dx, c.x.size());
  for (int n = 0; n < g.N; ++n)
    for (int o = 0; o < g.O; ++o)
      for (int oh = 0; oh < OH; ++oh)
        for (int ow = 0; ow < OW; ++ow) {
          const size_t yi = ((static_cast<size_t>(n) * g.O + o) * OH + oh) * OW + ow;
          for (int ch = 0; ch < g.C; ++ch)
            for (int kh = 0; kh < g.KH; ++kh)
              for (int kw = 0; kw < g.KW; ++kw) {
                const int ih = oh * g.stride - g.pad + kh, iw = ow * g.stride - g.pad + kw;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                const size_t xi = ((static_cast<size_t>(n) * g.C + ch) * g.H + ih) * g.W + iw;
                const size_t wi = static_cast<size_t>(o) * taps + (static_cast<size_t>(ch) * g.KH + kh) * g.KW + kw;
                const double x = c.x[xi], w = c.w[wi], dy = c.dy[yi];
                r.y.value[yi] += w * x, r.y.scale[yi] += std::fabs(w * x);
                r.dw.value[wi] += dy * x, r.dw.scale[wi] += std::fabs(dy * x);
                r.dx.value[xi] += w * dy, r.dx.scale[xi] += std::fabs(w * dy);
              }
        }
  return r;
}

// Forward: a GEMM over C*KH*KW; weight gradient: over N*OH*OW; input gradient: a GEMM over O, then
// col2im adds up to KH*KW of those.
inline Score conv_score(const ConvCase& c, const std::vector<float>& y, const std::vector<float>& dw, const std::vector<float>& dx) {
  const ConvGeom& g = c.g;
  const ConvReference r = conv_reference(c);
  const std::int64_t taps = static_cast<std::int64_t>(g.C) * g.KH * g.KW, cols = static_cast<std::int64_t>(g.N) * g.OH() * g.OW();
  return worst_ratio({{max_scaled(y, r.y), accumulation_tolerance(taps + 1)},
                      {max_scaled(dw, r.dw), accumulation_tolerance(cols + 2)},
                      {max_scaled(dx, r.dx), accumulation_tolerance(g.O + g.KH * g.KW + 1)}});
}

// ---- widening uint8 to float on the device: x * scale + offset, which nvcc contracts into one FMA.
struct WidenCase {
  std::vector<std::uint8_t> x;
  float scale = 0.0123f, offset = -0.4f;
};

inline WidenCase widen_u8_case(Rng& rng) {
  WidenCase c;
  c.x.resize(static_cast<size_t>(pick(rng, 1, 5000)));
  for (auto& v : c.x) v = static_cast<std::uint8_t>(1 + rng.below(255));
  return c;
}

// Fused or not, at most two roundings relative to |x * scale| + |offset| (the sum can cancel to ~0).
inline Score widen_u8_score(const WidenCase& c, const std::vector<float>& got) {
  Reference ref;
  for (std::uint8_t v : c.x) {
    ref.value.push_back(static_cast<double>(v) * c.scale + c.offset);
    ref.scale.push_back(std::fabs(static_cast<double>(v) * c.scale) + std::fabs(static_cast<double>(c.offset)));
  }
  return {max_scaled(got, ref), accumulation_tolerance(2)};
}

// ---- batch norm in evaluation: (x - mean) * gamma * rsqrt(var + eps) + beta per channel.
struct BatchNormEvalCase {
  int N = 0, C = 0, HW = 0;
  float eps = 1e-5f;
  std::vector<float> x, gamma, beta, mean, var;
  std::string shapes() const { return "N,C,HW=" + std::to_string(N) + "," + std::to_string(C) + "," + std::to_string(HW); }
};

inline BatchNormEvalCase batchnorm_eval_case(Rng& rng) {
  BatchNormEvalCase c;
  c.N = pick(rng, 1, 8);
  c.C = pick(rng, 1, 16);
  c.HW = pick(rng, 1, 40);
  c.x = random_vec(rng, static_cast<std::int64_t>(c.N) * c.C * c.HW);
  c.gamma = random_vec(rng, c.C);
  c.beta = random_vec(rng, c.C);
  c.mean = random_vec(rng, c.C);
  c.var.resize(static_cast<size_t>(c.C));
  for (auto& e : c.var) e = static_cast<float>(rng.uniform(0.2, 2.0));
  return c;
}

// The device rounds x - mean, var + eps, rsqrtf (within 2 ulp, i.e. 4 roundings), gamma * r, the product
// and the add of beta: 9 roundings relative to |(x - mean) gamma r| + |beta|.
inline Score batchnorm_eval_score(const BatchNormEvalCase& c, const std::vector<float>& got) {
  Reference ref;
  for (size_t i = 0; i < c.x.size(); ++i) {
    const size_t ch = i / static_cast<size_t>(c.HW) % static_cast<size_t>(c.C);
    const double r = 1.0 / std::sqrt(static_cast<double>(c.var[ch]) + c.eps);
    const double centred = (static_cast<double>(c.x[i]) - c.mean[ch]) * c.gamma[ch] * r;
    ref.value.push_back(centred + c.beta[ch]);
    // |x| + |mean| rather than |x - mean|: the subtraction's own rounding is relative to its operands' size.
    ref.scale.push_back((std::fabs(c.x[i]) + std::fabs(c.mean[ch])) * std::fabs(c.gamma[ch] * r) + std::fabs(c.beta[ch]));
  }
  return {max_scaled(got, ref), accumulation_tolerance(9)};
}


// ---- batch norm in training: batch statistics per channel, the normalised output, the running estimates.
struct BatchNormTrainCase {
  int N = 0, C = 0, HW = 0;
  float momentum = 0.1f, eps = 1e-5f;
  std::vector<float> x, gamma, beta, running_mean, running_var;
  std::string shapes() const { return "N,C,HW=" + std::to_string(N) + "x" + std::to_string(C) + "x" + std::to_string(HW); }
};

inline BatchNormTrainCase batchnorm_train_case(Rng& rng) {
  BatchNormTrainCase c;
  c.N = pick(rng, 2, 32);
  c.C = pick(rng, 1, 64);
  c.HW = pick(rng, 1, 81);
  c.x = random_vec(rng, static_cast<std::int64_t>(c.N) * c.C * c.HW);
  c.gamma = random_vec(rng, c.C);
  c.beta = random_vec(rng, c.C);
  c.running_mean = random_vec(rng, c.C);
  c.running_var.resize(static_cast<size_t>(c.C));
  for (auto& e : c.running_var) e = static_cast<float>(rng.uniform(0.2, 2.0));
  return c;
}

struct BatchNormTrainOut {
  std::vector<float> y, mean, invstd, running_mean, running_var;
};

// Every output against a double reference, relative to the size of its terms: y to
// (|x| + |mean|) |gamma r| + |beta|, as in eval, since x g + b cancels near zero (scoring y by |y|
// with max_rel's 1e-3 floor failed every seed while the kernel matched double exactly). The kernel
// keeps its statistics in double and rounds each output once; 9 roundings, as eval, leaves room for
// FMA and rsqrt but not for a statistic missing one element (an error near 1/(N HW) of the scale).
inline Score batchnorm_train_score(const BatchNormTrainCase& c, const BatchNormTrainOut& got) {
  const std::int64_t M = static_cast<std::int64_t>(c.N) * c.HW;
  const size_t C = static_cast<size_t>(c.C);
  Reference y{std::vector<double>(c.x.size()), std::vector<double>(c.x.size())}, mean, invstd, rm, rv;
  const double mom = c.momentum;
  for (size_t ch = 0; ch < C; ++ch) {
    auto at = [&](std::int64_t i) { return static_cast<size_t>((i / c.HW * c.C + static_cast<std::int64_t>(ch)) * c.HW + i % c.HW); };
    double s = 0, sabs = 0, q = 0;
    for (std::int64_t i = 0; i < M; ++i) s += c.x[at(i)], sabs += std::fabs(c.x[at(i)]);
    const double m = s / static_cast<double>(M);
    for (std::int64_t i = 0; i < M; ++i) q += (c.x[at(i)] - m) * (c.x[at(i)] - m);
    const double var = q / static_cast<double>(M), r = 1.0 / std::sqrt(var + c.eps), unbiased = M > 1 ? q / static_cast<double>(M - 1) : var;
    for (std::int64_t i = 0; i < M; ++i) {
      const size_t k = at(i);
      y.value[k] = (c.x[k] - m) * c.gamma[ch] * r + c.beta[ch];
      y.scale[k] = (std::fabs(c.x[k]) + std::fabs(m)) * std::fabs(c.gamma[ch] * r) + std::fabs(c.beta[ch]);
    }
    mean.value.push_back(m), mean.scale.push_back(sabs / static_cast<double>(M));
    invstd.value.push_back(r), invstd.scale.push_back(r);
    rm.value.push_back((1 - mom) * c.running_mean[ch] + mom * m);
    rm.scale.push_back((1 - mom) * std::fabs(c.running_mean[ch]) + mom * sabs / static_cast<double>(M));
    rv.value.push_back((1 - mom) * c.running_var[ch] + mom * unbiased);
    rv.scale.push_back((1 - mom) * c.running_var[ch] + mom * unbiased);
  }
  const double tol = accumulation_tolerance(9);
  return worst_ratio({{max_scaled(got.y, y), tol},
                      {max_scaled(got.mean, mean), tol},
                      {max_scaled(got.invstd, invstd), tol},
                      {max_scaled(got.running_mean, rm), tol},
                      {max_scaled(got.running_var, rv), tol}});
}

// ---- soft-target losses: softmax cross-entropy against target rows weighted per row, and BCE on logits.
struct SoftLossCase {
  bool bce = false;
  int B = 0, K = 0;
  std::vector<float> z, t, mask;  // mask: per-row weights 0, 0.5 or 1 (softmax only)
  std::string shapes() const { return "B,K=" + std::to_string(B) + "x" + std::to_string(K); }
};

inline SoftLossCase soft_loss_case(Rng& rng, bool bce) {
  SoftLossCase c;
  c.bce = bce;
  c.B = pick(rng, 1, 64);
  c.K = bce ? 1 : pick(rng, 2, 1500);
  c.z = random_vec(rng, static_cast<std::int64_t>(c.B) * c.K);
  c.t.resize(c.z.size());
  for (auto& v : c.t) v = static_cast<float>(rng.uniform(0.0, 1.0));
  // Fractional weights too: the loss divides by the sum of the weights, not the count of their non-zeros.
  c.mask.resize(static_cast<size_t>(c.B));
  for (auto& m : c.mask) m = rng.uniform() < 0.2 ? 0.f : rng.uniform() < 0.5 ? 0.5f : 1.f;
  return c;
}

// The mean loss (over the weight sum, or B for BCE) and the logits' gradient, in double, each relative to the
// size of its terms: (softmax tsum + t) w / count for a gradient whose two terms cancel when the prediction
// matches its target (scoring it by |d| with max_rel's 1e-3 floor failed a correct kernel at 1.3e-5).
// The kernels work in double and round each output once; 9 roundings leave room for the float sum of rows.
inline Score soft_loss_score(const SoftLossCase& c, const std::vector<float>& dlogits, double loss) {
  Reference d{std::vector<double>(c.z.size()), std::vector<double>(c.z.size())};
  double count = 0, value = 0, scale = 0;
  for (int b = 0; b < c.B; ++b) count += c.bce ? 1.0 : c.mask[static_cast<size_t>(b)];
  for (int b = 0; b < c.B; ++b) {
    const size_t row = static_cast<size_t>(b) * c.K;
    if (c.bce) {
      const double x = c.z[row], t = c.t[row], p = 1.0 / (1.0 + std::exp(-x)), l = std::log1p(std::exp(-std::fabs(x)));
      d.value[row] = (p - t) / c.B, d.scale[row] = (p + t) / c.B;
      value += std::max(x, 0.0) - x * t + l, scale += std::fabs(x) + std::fabs(x * t) + l;
      continue;
    }
    const double w = c.mask[static_cast<size_t>(b)];
    if (w == 0.0) continue;  // value and scale 0: the gradient must be exactly 0
    double m = -INFINITY, s = 0, tsum = 0;
    for (int k = 0; k < c.K; ++k) m = std::max(m, static_cast<double>(c.z[row + k]));
    for (int k = 0; k < c.K; ++k) s += std::exp(c.z[row + k] - m), tsum += c.t[row + k];
    const double lse = m + std::log(s);
    for (int k = 0; k < c.K; ++k) {
      const double p = std::exp(c.z[row + k] - lse) * tsum, t = c.t[row + k];
      d.value[row + k] = w * (p - t) / count, d.scale[row + k] = w * (p + t) / count;
      value += w * t * (lse - c.z[row + k]), scale += w * t * (std::fabs(lse) + std::fabs(c.z[row + k]));
    }
  }
  const double n = c.bce ? c.B : count > 0 ? count : 1.0;
  const double loss_error = std::fabs(loss - value / n) / std::max(scale / n, std::numeric_limits<double>::min());
  const double tol = accumulation_tolerance(9);
  return worst_ratio({{max_scaled(dlogits, d), tol}, {loss_error, tol}});
}

}  // namespace tb::parity
