// The GPU parity checks' cases and scoring (native/src/cuda/parity_cases.h),
// replayed on the host with the device's arithmetic: fp32 sums in the order the
// kernels (or a split-K library) add, FMA contraction, rsqrtf's 2-ulp error.
// Compiled without CUDA by test/native/cuda-parity-host.test.ts.
//   parity_replay <check>   prints what it measured; exit 0 when the check holds
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>

#include "cuda/parity_cases.h"

using namespace tb;
using namespace tb::parity;

namespace {

constexpr int kSeeds = 8;  // as test/gpu/parity.test.ts

// ---- the device's arithmetic, emulated

// gemm_f32_k and cuBLASLt with split K: products fused into the running sum, then alpha acc + beta c fused.
std::vector<float> gemm_device(const GemmCase& c, int splits) {
  std::vector<float> out(static_cast<size_t>(c.M) * c.N);
  for (int i = 0; i < c.M; ++i)
    for (int j = 0; j < c.N; ++j) {
      float acc = 0.f;
      const int per = (c.K + splits - 1) / splits;
      for (int k0 = 0; k0 < c.K; k0 += per) {
        float part = 0.f;
        for (int k = k0; k < std::min(c.K, k0 + per); ++k) {
          const float a = c.ta ? c.A[static_cast<size_t>(k) * c.lda + i] : c.A[static_cast<size_t>(i) * c.lda + k];
          const float b = c.tb ? c.B[static_cast<size_t>(j) * c.ldb + k] : c.B[static_cast<size_t>(k) * c.ldb + j];
          part = std::fmaf(a, b, part);
        }
        acc += part;
      }
      const size_t at = static_cast<size_t>(i) * c.N + j;
      out[at] = std::fmaf(c.alpha, acc, c.beta * c.C[at]);
    }
  return out;
}

struct ConvOut {
  std::vector<float> y, dw, dx;
};

// im2col + gemm_f32 (K = C*KH*KW) forward; dW = dY col^T (K = N*OH*OW); dcol = W^T dY (K = O), col2im in float.
ConvOut conv_device(const ConvCase& c) {
  const ConvGeom& g = c.g;
  const int OH = g.OH(), OW = g.OW(), ohw = OH * OW, taps = g.C * g.KH * g.KW, cols = g.N * ohw;
  std::vector<float> col(static_cast<size_t>(taps) * cols, 0.f), dyg(static_cast<size_t>(g.O) * cols);
  for (int r = 0; r < taps; ++r)
    for (int q = 0; q < cols; ++q) {
      const int ch = r / (g.KH * g.KW), kh = r / g.KW % g.KH, kw = r % g.KW, n = q / ohw, oh = q % ohw / OW, ow = q % OW;
      const int ih = oh * g.stride - g.pad + kh, iw = ow * g.stride - g.pad + kw;
      if (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) col[static_cast<size_t>(r) * cols + q] = c.x[((static_cast<size_t>(n) * g.C + ch) * g.H + ih) * g.W + iw];
    }
  for (int o = 0; o < g.O; ++o)
    for (int q = 0; q < cols; ++q) dyg[static_cast<size_t>(o) * cols + q] = c.dy[(static_cast<size_t>(q / ohw) * g.O + o) * ohw + q % ohw];
  ConvOut out;
  out.y.resize(c.dy.size());
  for (int o = 0; o < g.O; ++o)
    for (int q = 0; q < cols; ++q) {
      float acc = 0.f;
      for (int r = 0; r < taps; ++r) acc = std::fmaf(c.w[static_cast<size_t>(o) * taps + r], col[static_cast<size_t>(r) * cols + q], acc);
      out.y[(static_cast<size_t>(q / ohw) * g.O + o) * ohw + q % ohw] = acc;
    }
  out.dw.resize(c.w.size());
  for (int o = 0; o < g.O; ++o)
    for (int r = 0; r < taps; ++r) {
      float acc = 0.f;
      for (int q = 0; q < cols; ++q) acc = std::fmaf(dyg[static_cast<size_t>(o) * cols + q], col[static_cast<size_t>(r) * cols + q], acc);
      out.dw[static_cast<size_t>(o) * taps + r] = acc;
    }
  std::vector<float> dcol(col.size());
  for (int r = 0; r < taps; ++r)
    for (int q = 0; q < cols; ++q) {
      float acc = 0.f;
      for (int o = 0; o < g.O; ++o) acc = std::fmaf(c.w[static_cast<size_t>(o) * taps + r], dyg[static_cast<size_t>(o) * cols + q], acc);
      dcol[static_cast<size_t>(r) * cols + q] = acc;
    }
  out.dx.assign(c.x.size(), 0.f);
  for (size_t i = 0; i < c.x.size(); ++i) {
    const int iw = static_cast<int>(i % g.W), ih = static_cast<int>(i / g.W % g.H), ch = static_cast<int>(i / (g.W * g.H) % g.C),
              n = static_cast<int>(i / (static_cast<size_t>(g.W) * g.H * g.C));
    float s = 0.f;
    for (int kh = 0; kh < g.KH; ++kh)
      for (int kw = 0; kw < g.KW; ++kw) {
        const int oh_s = ih + g.pad - kh, ow_s = iw + g.pad - kw;
        if (oh_s < 0 || ow_s < 0 || oh_s % g.stride || ow_s % g.stride || oh_s / g.stride >= OH || ow_s / g.stride >= OW) continue;
        s += dcol[static_cast<size_t>((ch * g.KH + kh) * g.KW + kw) * cols + static_cast<size_t>(n) * ohw + (oh_s / g.stride) * OW + ow_s / g.stride];
      }
    out.dx[i] = s;
  }
  return out;
}

std::vector<float> widen_device(const WidenCase& c, bool fused) {
  std::vector<float> out;
  for (std::uint8_t v : c.x) {
    const float x = static_cast<float>(v);
    if (fused) {
      out.push_back(std::fmaf(x, c.scale, c.offset));
    } else {
      volatile float product = x * c.scale;  // volatile: keep the host compiler from fusing it back
      out.push_back(product + c.offset);
    }
  }
  return out;
}

// bn_eval_k: g = gamma * rsqrtf(var + eps), rsqrtf taken `ulps` ulp off (documented bound: 2), then one FMA.
std::vector<float> batchnorm_eval_device(const BatchNormEvalCase& c, int ulps) {
  std::vector<float> out(c.x.size());
  for (size_t i = 0; i < c.x.size(); ++i) {
    const size_t ch = i / static_cast<size_t>(c.HW) % static_cast<size_t>(c.C);
    float r = 1.f / std::sqrt(c.var[ch] + c.eps);
    for (int u = 0; u < std::abs(ulps); ++u) r = std::nextafter(r, ulps > 0 ? INFINITY : 0.f);
    const float g = c.gamma[ch] * r;
    out[i] = std::fmaf(c.x[i] - c.mean[ch], g, c.beta[ch]);
  }
  return out;
}

// What a bn_train_k bug would compute instead (none: the kernel as it is).
enum class BnPlant { none, stats_miss_last, no_eps, biased_running_var };

// bn_train_k: statistics summed in double, each output rounded to float once; y = x g + b with
// g = gamma / sqrt(var + eps) and b = beta - mean g, in double.
BatchNormTrainOut batchnorm_train_device(const BatchNormTrainCase& c, BnPlant plant) {
  const std::int64_t M = static_cast<std::int64_t>(c.N) * c.HW, counted = plant == BnPlant::stats_miss_last ? M - 1 : M;
  const double eps = plant == BnPlant::no_eps ? 0.0 : c.eps, mom = c.momentum;
  BatchNormTrainOut o{std::vector<float>(c.x.size()), {}, {}, {}, {}};
  for (int ch = 0; ch < c.C; ++ch) {
    auto at = [&](std::int64_t i) { return static_cast<size_t>((i / c.HW * c.C + ch) * c.HW + i % c.HW); };
    double s = 0, q = 0;
    for (std::int64_t i = 0; i < counted; ++i) s += c.x[at(i)];
    const double mean = s / static_cast<double>(counted);
    for (std::int64_t i = 0; i < counted; ++i) q += (c.x[at(i)] - mean) * (c.x[at(i)] - mean);
    const double var = q / static_cast<double>(counted);
    const double unbiased = plant == BnPlant::biased_running_var || counted < 2 ? var : q / static_cast<double>(counted - 1);
    o.mean.push_back(static_cast<float>(mean));
    o.invstd.push_back(static_cast<float>(1.0 / std::sqrt(var + eps)));
    o.running_mean.push_back(static_cast<float>((1 - mom) * c.running_mean[static_cast<size_t>(ch)] + mom * mean));
    o.running_var.push_back(static_cast<float>((1 - mom) * c.running_var[static_cast<size_t>(ch)] + mom * unbiased));
    const double g = c.gamma[static_cast<size_t>(ch)] / std::sqrt(var + eps), b = c.beta[static_cast<size_t>(ch)] - mean * g;
    for (std::int64_t i = 0; i < M; ++i) o.y[at(i)] = static_cast<float>(c.x[at(i)] * g + b);
  }
  return o;
}

// softmax_soft_k and bce_k: everything in double, each output rounded to float once; the host adds the rows'
// float losses. by_nonzero: divide by the count of weighted rows instead of the weights' sum (a planted bug).
struct SoftLossOut {
  std::vector<float> d;
  double loss = 0;
};

SoftLossOut soft_loss_device(const SoftLossCase& c, bool by_nonzero) {
  SoftLossOut o{std::vector<float>(c.z.size(), 0.f), 0.0};
  double count = 0;
  for (float m : c.mask) count += by_nonzero ? (m != 0.f ? 1.0 : 0.0) : m;
  for (int b = 0; b < c.B; ++b) {
    const size_t row = static_cast<size_t>(b) * c.K;
    if (c.bce) {
      const double x = c.z[row], t = c.t[row];
      o.loss += static_cast<float>(std::max(x, 0.0) - x * t + std::log1p(std::exp(-std::fabs(x))));
      o.d[row] = static_cast<float>((1.0 / (1.0 + std::exp(-x)) - t) / c.B);
      continue;
    }
    const double w = c.mask[static_cast<size_t>(b)];
    if (w == 0.0) continue;
    double m = -INFINITY, s = 0, tsum = 0, r = 0;
    for (int k = 0; k < c.K; ++k) m = std::max(m, static_cast<double>(c.z[row + k]));
    for (int k = 0; k < c.K; ++k) s += std::exp(c.z[row + k] - m);
    const double lse = m + std::log(s);
    for (int k = 0; k < c.K; ++k) tsum += c.t[row + k], r += c.t[row + k] * (lse - c.z[row + k]);
    o.loss += static_cast<float>(w * r);
    for (int k = 0; k < c.K; ++k) o.d[row + k] = static_cast<float>(w * (std::exp(c.z[row + k] - lse) * tsum - c.t[row + k]) / count);
  }
  double weights = 0;
  for (float m : c.mask) weights += m;
  o.loss /= c.bce ? c.B : (weights > 0 ? weights : 1);
  return o;
}

// ---- checks: print what they measured, return whether the rule held

bool report(const char* what, int seed, const Score& s, bool want_pass) {
  const bool ok = passes(s) == want_pass;
  std::printf("%s seed %d: error %.3e, tolerance %.3e -> %s%s\n", what, seed, s.error, s.tolerance, passes(s) ? "pass" : "FAIL",
              ok ? "" : "   <-- not what the rule must say");
  return ok;
}

bool nan_aggregates() {
  bool ok = std::isnan(worse(0.5, kNaN)) && std::isnan(worse(kNaN, 0.5)) && std::isnan(worst({0.1, kNaN, 0.2}));
  ok = ok && std::isnan(max_rel({1.f, 2.f}, {1.f, NAN})) && std::isnan(max_rel({NAN, 2.f}, {1.f, 2.f}));
  ok = ok && std::isnan(norm_rel({1.f, NAN}, {1.f, 2.f}));
  Reference ref{{1.0, 2.0}, {1.0, 2.0}};
  ok = ok && std::isnan(max_scaled({1.f, NAN}, ref));
  ok = ok && !passes({kNaN, 1.0}) && !passes(worst_ratio({{0.0, 1.0}, {kNaN, 1.0}})) && passes(worst_ratio({{0.5, 1.0}, {1e-6, 1e-5}}));
  std::printf("NaN propagates through worse, worst, max_rel, norm_rel, max_scaled and worst_ratio: %s\n", ok ? "yes" : "NO");
  return ok;
}

bool nan_output_fails() {
  bool ok = true;
  Rng rg = case_rng("gemm_f32", 1);
  const GemmCase gc = gemm_case(rg, 150, 150, 300);
  auto y = gemm_device(gc, 1);
  y[y.size() / 2] = NAN;
  ok &= report("gemm_f32 with one NaN output", 1, gemm_f32_score(gc, y), false);
  Rng rc = case_rng("conv2d", 1);
  const ConvCase cc = conv_case(rc);
  ConvOut co = conv_device(cc);
  co.dx.back() = NAN;
  ok &= report("conv2d with one NaN input gradient", 1, conv_score(cc, co.y, co.dw, co.dx), false);
  Rng rw = case_rng("widen_u8", 1);
  const WidenCase wc = widen_u8_case(rw);
  auto w = widen_device(wc, true);
  w[0] = NAN;
  ok &= report("widen_u8 with one NaN", 1, widen_u8_score(wc, w), false);
  Rng rb = case_rng("batchnorm_eval", 1);
  const BatchNormEvalCase bc = batchnorm_eval_case(rb);
  auto b = batchnorm_eval_device(bc, 0);
  b[0] = NAN;
  ok &= report("batchnorm_eval with one NaN", 1, batchnorm_eval_score(bc, b), false);
  return ok;
}

bool gemm_orders_pass(const char* op, int max_m, int max_n, int max_k, int multiple) {
  bool ok = true;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    Rng rng = case_rng(op, seed);
    const GemmCase c = gemm_case(rng, max_m, max_n, max_k, multiple);
    ok &= report((std::string(op) + " " + c.shapes() + ", the kernel's order").c_str(), seed, gemm_f32_score(c, gemm_device(c, 1)), true);
    ok &= report((std::string(op) + " " + c.shapes() + ", split K in 4").c_str(), seed, gemm_f32_score(c, gemm_device(c, 4)), true);
  }
  return ok;
}

bool gemm_detects_errors() {
  bool ok = true;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    Rng rng = case_rng("gemm_f32", seed);
    GemmCase c = gemm_case(rng, 150, 150, 300);
    if (c.K < 2) continue;
    // One product of the sum left out (an off-by-one in the K loop).
    GemmCase shorter = c;
    shorter.K = c.K - 1;
    std::vector<float> got = gemm_device(c, 1);
    got[0] = gemm_device(shorter, 1)[0];
    ok &= report("gemm_f32 missing the last product of C[0]", seed, gemm_f32_score(c, got), false);
  }
  return ok;
}

bool conv_passes_and_detects() {
  bool ok = true;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    Rng rng = case_rng("conv2d", seed);
    const ConvCase c = conv_case(rng);
    ConvOut o = conv_device(c);
    ok &= report(("conv2d " + c.shapes() + ", the device's GEMMs").c_str(), seed, conv_score(c, o.y, o.dw, o.dx), true);
    // The weight gradient of the last sample dropped (a chunking bug): must fail.
    ConvCase fewer = c;
    if (c.g.N > 1) {
      fewer.g.N = c.g.N - 1;
      fewer.x.resize(fewer.x.size() / c.g.N * fewer.g.N);
      fewer.dy.resize(fewer.dy.size() / c.g.N * fewer.g.N);
      ok &= report("conv2d weight gradient without the last sample", seed, conv_score(c, o.y, conv_device(fewer).dw, o.dx), false);
    }
  }
  return ok;
}

bool widen_passes_and_detects() {
  bool ok = true;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    Rng rng = case_rng("widen_u8", seed);
    WidenCase c = widen_u8_case(rng);
    ok &= report("widen_u8 fused (FFMA)", seed, widen_u8_score(c, widen_device(c, true)), true);
    ok &= report("widen_u8 unfused", seed, widen_u8_score(c, widen_device(c, false)), true);
    WidenCase off = c;
    off.offset = -0.4001f;
    ok &= report("widen_u8 with offset -0.4001", seed, widen_u8_score(c, widen_device(off, true)), false);
  }
  return ok;
}

bool batchnorm_eval_passes_and_detects() {
  bool ok = true;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    Rng rng = case_rng("batchnorm_eval", seed);
    BatchNormEvalCase c = batchnorm_eval_case(rng);
    for (int ulps : {-2, 0, 2}) ok &= report(("batchnorm_eval, rsqrtf " + std::to_string(ulps) + " ulp").c_str(), seed, batchnorm_eval_score(c, batchnorm_eval_device(c, ulps)), true);
    BatchNormEvalCase no_eps = c;
    no_eps.eps = 0.f;
    ok &= report("batchnorm_eval without eps", seed, batchnorm_eval_score(c, batchnorm_eval_device(no_eps, 0)), false);
  }
  return ok;
}

bool batchnorm_train_passes_and_detects() {
  bool ok = true;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    Rng rng = case_rng("batchnorm_train", seed);
    const BatchNormTrainCase c = batchnorm_train_case(rng);
    ok &= report(("batchnorm_train " + c.shapes() + ", the kernel's arithmetic").c_str(), seed, batchnorm_train_score(c, batchnorm_train_device(c, BnPlant::none)), true);
    ok &= report("batchnorm_train without eps", seed, batchnorm_train_score(c, batchnorm_train_device(c, BnPlant::no_eps)), false);
    ok &= report("batchnorm_train with a biased running variance", seed, batchnorm_train_score(c, batchnorm_train_device(c, BnPlant::biased_running_var)), false);
    ok &= report("batchnorm_train statistics missing the last element", seed, batchnorm_train_score(c, batchnorm_train_device(c, BnPlant::stats_miss_last)), false);
    BatchNormTrainOut nan = batchnorm_train_device(c, BnPlant::none);
    nan.running_var.back() = NAN;
    ok &= report("batchnorm_train with a NaN running variance", seed, batchnorm_train_score(c, nan), false);
  }
  return ok;
}

bool soft_losses_pass_and_detect() {
  bool ok = true;
  for (const char* op : {"softmax_ce_soft", "bce_logits"}) {
    const bool bce = std::string(op) == "bce_logits";
    for (int seed = 1; seed <= kSeeds; ++seed) {
      Rng rng = case_rng(op, seed);
      const SoftLossCase c = soft_loss_case(rng, bce);
      const SoftLossOut o = soft_loss_device(c, false);
      ok &= report((std::string(op) + " " + c.shapes() + ", the kernel's arithmetic").c_str(), seed, soft_loss_score(c, o.d, o.loss), true);
      SoftLossOut nan = o;
      nan.d.back() = NAN;
      ok &= report((std::string(op) + " with a NaN gradient").c_str(), seed, soft_loss_score(c, nan.d, nan.loss), false);
      SoftLossOut off = o;
      off.loss *= 1.0 + 1e-4;
      ok &= report((std::string(op) + " with the loss 1e-4 off").c_str(), seed, soft_loss_score(c, off.d, off.loss), false);
      bool weighted = false;  // a fractional weight makes the weights' sum differ from the count of weighted rows
      for (float m : c.mask) weighted |= m == 0.5f;
      if (!bce && weighted) {
        const SoftLossOut wrong = soft_loss_device(c, true);
        ok &= report("softmax_ce_soft divided by the weighted rows' count", seed, soft_loss_score(c, wrong.d, o.loss), false);
      }
    }
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const std::map<std::string, std::function<bool()>> checks = {
      {"nan-aggregates", nan_aggregates},
      {"nan-output-fails", nan_output_fails},
      {"gemm-f32-orders-pass", [] { return gemm_orders_pass("gemm_f32", 150, 150, 300, 1); }},
      {"gemm-engine-orders-pass", [] { return gemm_orders_pass("gemm_engine", 200, 200, 400, 1) && gemm_orders_pass("gemm_lt_fp32", 200, 200, 400, 8); }},
      {"gemm-detects-errors", gemm_detects_errors},
      {"conv2d", conv_passes_and_detects},
      {"widen-u8", widen_passes_and_detects},
      {"batchnorm-eval", batchnorm_eval_passes_and_detects},
      {"batchnorm-train", batchnorm_train_passes_and_detects},
      {"soft-losses", soft_losses_pass_and_detect},
  };
  if (argc != 2 || !checks.count(argv[1])) {
    std::fprintf(stderr, "usage: parity_replay <check>; checks:");
    for (const auto& kv : checks) std::fprintf(stderr, " %s", kv.first.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  return checks.at(argv[1])() ? 0 : 1;
}
