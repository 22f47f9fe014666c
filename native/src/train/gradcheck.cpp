#include "train/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/errors.h"
#include "core/rng.h"
#include "cpu/ops.h"

namespace tb {
namespace {

using Vec = std::vector<double>;

struct Var {
  const char* name;
  Vec* value;
  Vec grad;
};

// Values away from zero so ReLU kinks and |x| in the losses are never crossed by the step.
Vec random_nonzero(Rng& rng, std::int64_t n, double lo = 0.1, double hi = 1.0) {
  Vec v(static_cast<size_t>(n));
  for (auto& x : v) x = rng.uniform(lo, hi) * (rng.uniform() < 0.5 ? -1.0 : 1.0);
  return v;
}

int pick(Rng& rng, int lo, int hi) { return lo + static_cast<int>(rng.below(static_cast<std::uint64_t>(hi - lo + 1))); }

// Compares backward() against central differences of f() for every entry of
// every variable (shapes are small), returning the worst relative error.
void compare(std::vector<Var>& vars, const std::function<double()>& f, const std::function<void()>& backward,
             GradcheckResult& r) {
  for (auto& v : vars) v.grad.assign(v.value->size(), 0.0);
  backward();
  const double h = 1e-6;
  for (auto& v : vars) {
    for (size_t i = 0; i < v.value->size(); ++i) {
      double& x = (*v.value)[i];
      const double saved = x;
      x = saved + h;
      const double up = f();
      x = saved - h;
      const double down = f();
      x = saved;
      const double numeric = (up - down) / (2 * h);
      const double analytic = v.grad[i];
      const double err = std::fabs(analytic - numeric) / std::max(std::fabs(analytic) + std::fabs(numeric), 1e-3);
      r.max_rel_error = std::max(r.max_rel_error, err);
      ++r.checked;
    }
  }
}

// f = sum(R * y): a random upstream gradient R makes every output entry count.
double weighted_sum(const Vec& y, const Vec& R) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += y[i] * R[i];
  return s;
}

std::string dims(std::initializer_list<int> d) {
  std::string s;
  for (int x : d) s += (s.empty() ? "" : "x") + std::to_string(x);
  return s;
}

void check_linear(Rng& rng, GradcheckResult& r) {
  const int B = pick(rng, 1, 5), I = pick(rng, 1, 7), O = pick(rng, 1, 6);
  const bool bias = rng.uniform() < 0.7;
  r.shapes = "B,I,O=" + dims({B, I, O}) + (bias ? " bias" : " no-bias");
  Vec x = random_nonzero(rng, B * I), W = random_nonzero(rng, O * I), b = random_nonzero(rng, O), y(B * O),
      R = random_nonzero(rng, B * O);
  auto f = [&] {
    linear_forward(y.data(), x.data(), W.data(), bias ? b.data() : nullptr, B, I, O, nullptr);
    return weighted_sum(y, R);
  };
  std::vector<Var> vars{{"x", &x, {}}, {"W", &W, {}}};
  if (bias) vars.push_back({"b", &b, {}});
  compare(vars, f, [&] {
    linear_backward(vars[0].grad.data(), vars[1].grad.data(), bias ? vars[2].grad.data() : nullptr, R.data(), x.data(),
                    W.data(), B, I, O, nullptr);
  }, r);
}

void check_conv(Rng& rng, GradcheckResult& r) {
  ConvGeom g{};
  g.N = pick(rng, 1, 3);
  g.C = pick(rng, 1, 3);
  g.O = pick(rng, 1, 4);
  const int ks[] = {1, 2, 3, 5};
  g.KH = ks[rng.below(4)];
  g.KW = rng.uniform() < 0.7 ? g.KH : ks[rng.below(4)];
  g.stride = pick(rng, 1, 3);
  g.pad = pick(rng, 0, std::min(g.KH, g.KW) - 1);
  g.H = pick(rng, std::max(g.KH, 3), 7);
  g.W = pick(rng, std::max(g.KW, 3), 7);
  const bool bias = rng.uniform() < 0.5;
  r.shapes = "N,C,H,W=" + dims({g.N, g.C, g.H, g.W}) + " O=" + std::to_string(g.O) + " k=" + dims({g.KH, g.KW}) +
             " stride=" + std::to_string(g.stride) + " pad=" + std::to_string(g.pad) + (bias ? " bias" : " no-bias");
  const std::int64_t out_n = static_cast<std::int64_t>(g.N) * g.O * g.OH() * g.OW();
  Vec x = random_nonzero(rng, g.N * g.C * g.H * g.W), W = random_nonzero(rng, g.O * g.C * g.KH * g.KW),
      b = random_nonzero(rng, g.O), y(out_n), R = random_nonzero(rng, out_n);
  ConvWorkspace<double> ws;
  auto f = [&] {
    conv2d_forward(y.data(), x.data(), W.data(), bias ? b.data() : nullptr, g, ws, nullptr);
    return weighted_sum(y, R);
  };
  std::vector<Var> vars{{"x", &x, {}}, {"W", &W, {}}};
  if (bias) vars.push_back({"b", &b, {}});
  compare(vars, f, [&] {
    conv2d_backward(vars[0].grad.data(), vars[1].grad.data(), bias ? vars[2].grad.data() : nullptr, R.data(), x.data(),
                    W.data(), g, ws, nullptr);
  }, r);
}

void check_batchnorm(Rng& rng, GradcheckResult& r, bool train) {
  const int N = pick(rng, 2, 4), C = pick(rng, 1, 3), HW = pick(rng, 1, 5);
  r.shapes = "N,C,HW=" + dims({N, C, HW}) + (train ? " train" : " eval");
  const std::int64_t n = static_cast<std::int64_t>(N) * C * HW;
  Vec x = random_nonzero(rng, n), gamma = random_nonzero(rng, C), beta = random_nonzero(rng, C), y(n),
      R = random_nonzero(rng, n), mean(C), invstd(C), rmean = random_nonzero(rng, C), rvar(C);
  for (auto& v : rvar) v = rng.uniform(0.5, 2.0);
  auto f = [&] {
    if (train)
      batchnorm_forward_train(y.data(), mean.data(), invstd.data(), x.data(), gamma.data(), beta.data(),
                              static_cast<double*>(nullptr), static_cast<double*>(nullptr), N, C, HW, 0.1, 1e-5, nullptr);
    else
      batchnorm_forward_eval(y.data(), x.data(), gamma.data(), beta.data(), rmean.data(), rvar.data(), N, C, HW, 1e-5,
                             nullptr);
    return weighted_sum(y, R);
  };
  std::vector<Var> vars{{"x", &x, {}}, {"gamma", &gamma, {}}, {"beta", &beta, {}}};
  compare(vars, f, [&] {
    if (train) {
      f();  // refresh the saved statistics for the unperturbed input
      batchnorm_backward(vars[0].grad.data(), vars[1].grad.data(), vars[2].grad.data(), R.data(), x.data(),
                         gamma.data(), mean.data(), invstd.data(), N, C, HW, nullptr);
    } else {
      // Eval mode is an affine map per channel: y = gamma * (x - rmean) / sqrt(rvar + eps) + beta.
      for (int ni = 0; ni < N; ++ni)
        for (int c = 0; c < C; ++c)
          for (int i = 0; i < HW; ++i) {
            const std::int64_t k = (static_cast<std::int64_t>(ni) * C + c) * HW + i;
            const double is = 1.0 / std::sqrt(rvar[c] + 1e-5);
            vars[0].grad[k] = R[k] * gamma[c] * is;
            vars[1].grad[c] += R[k] * (x[k] - rmean[c]) * is;
            vars[2].grad[c] += R[k];
          }
    }
  }, r);
}

void check_unary(Rng& rng, GradcheckResult& r, const std::string& op) {
  const int N = pick(rng, 1, 3), C = pick(rng, 1, 4), HW = pick(rng, 1, 6);
  r.shapes = "N,C,HW=" + dims({N, C, HW});
  const std::int64_t n = static_cast<std::int64_t>(N) * C * HW;
  Vec x = random_nonzero(rng, n), b = random_nonzero(rng, n), mask(n);
  const std::int64_t out_n = op == "global_avgpool" ? static_cast<std::int64_t>(N) * C : n;
  Vec y(out_n), R = random_nonzero(rng, out_n);
  Rng drop = Rng::derive(rng.next_u64(), 7);
  // Dropout is checked with its mask fixed (drawn once), which is what backward assumes.
  if (op == "dropout") dropout_forward(y.data(), mask.data(), x.data(), n, 0.3, &drop);
  auto f = [&] {
    if (op == "relu") relu_forward(y.data(), x.data(), n);
    else if (op == "add") add_forward(y.data(), x.data(), b.data(), n);
    else if (op == "global_avgpool") global_avgpool_forward(y.data(), x.data(), N, C, HW);
    else if (op == "flatten") std::copy(x.begin(), x.end(), y.begin());  // flatten is a view: identity on data
    else
      for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] * mask[i];
    return weighted_sum(y, R);
  };
  std::vector<Var> vars{{"x", &x, {}}};
  if (op == "add") vars.push_back({"b", &b, {}});
  compare(vars, f, [&] {
    if (op == "relu") {
      f();
      relu_backward(vars[0].grad.data(), R.data(), y.data(), n);
    } else if (op == "add") {
      std::copy(R.begin(), R.end(), vars[0].grad.begin());
      std::copy(R.begin(), R.end(), vars[1].grad.begin());
    } else if (op == "global_avgpool") {
      global_avgpool_backward(vars[0].grad.data(), R.data(), N, C, HW);
    } else if (op == "flatten") {
      std::copy(R.begin(), R.end(), vars[0].grad.begin());
    } else {
      dropout_backward(vars[0].grad.data(), R.data(), mask.data(), n);
    }
  }, r);
}

void check_loss(Rng& rng, GradcheckResult& r, const std::string& op) {
  const int B = pick(rng, 1, 5), K = pick(rng, 2, 7);
  Vec z = random_nonzero(rng, static_cast<std::int64_t>(B) * K, 0.1, 3.0);
  const double scale = rng.uniform(0.5, 2.0);
  std::vector<std::int32_t> labels(B);
  for (auto& l : labels) l = static_cast<std::int32_t>(rng.below(K));
  Vec t(z.size()), mask(B), tb(B), target = random_nonzero(rng, static_cast<std::int64_t>(z.size()));
  for (auto& x : t) x = rng.uniform(0.01, 1.0);
  for (int b = 0; b < B; ++b) {
    mask[b] = (b == 0 || rng.uniform() < 0.6) ? 1.0 : 0.0;
    tb[b] = rng.uniform(0.0, 1.0);
  }
  r.shapes = "B,K=" + dims({B, K});
  auto f = [&] {
    if (op == "softmax_ce") return scale * softmax_ce_forward_backward<double>(nullptr, z.data(), labels.data(), B, K, 1, nullptr);
    if (op == "softmax_ce_soft") return scale * softmax_ce_soft_forward_backward<double>(nullptr, z.data(), t.data(), mask.data(), B, K, 1);
    if (op == "bce_logits") return scale * bce_logits_forward_backward<double>(nullptr, z.data(), tb.data(), B, 1);
    return scale * mse_forward_backward<double>(nullptr, z.data(), target.data(), static_cast<std::int64_t>(z.size()), 1);
  };
  if (op == "bce_logits") z.resize(B);
  std::vector<Var> vars{{"logits", &z, {}}};
  compare(vars, f, [&] {
    double* d = vars[0].grad.data();
    if (op == "softmax_ce") softmax_ce_forward_backward(d, z.data(), labels.data(), B, K, scale, nullptr);
    else if (op == "softmax_ce_soft") softmax_ce_soft_forward_backward(d, z.data(), t.data(), mask.data(), B, K, scale);
    else if (op == "bce_logits") bce_logits_forward_backward(d, z.data(), tb.data(), B, scale);
    else mse_forward_backward(d, z.data(), target.data(), static_cast<std::int64_t>(z.size()), scale);
  }, r);
}

}  // namespace

std::vector<std::string> gradcheck_ops() {
  return {"linear", "conv2d", "batchnorm", "batchnorm_eval", "relu", "add", "global_avgpool", "flatten", "dropout",
          "softmax_ce", "softmax_ce_soft", "bce_logits", "mse"};
}

GradcheckResult gradcheck(const std::string& op, std::uint64_t seed) {
  GradcheckResult r;
  r.op = op;
  // FNV-1a of the name: the same shapes for the same seed on every platform.
  std::uint64_t label = 1469598103934665603ull;
  for (unsigned char c : op) label = (label ^ c) * 1099511628211ull;
  Rng rng = Rng::derive(seed, label);
  if (op == "linear") check_linear(rng, r);
  else if (op == "conv2d") check_conv(rng, r);
  else if (op == "batchnorm") check_batchnorm(rng, r, true);
  else if (op == "batchnorm_eval") check_batchnorm(rng, r, false);
  else if (op == "relu" || op == "add" || op == "global_avgpool" || op == "flatten" || op == "dropout") check_unary(rng, r, op);
  else if (op == "softmax_ce" || op == "softmax_ce_soft" || op == "bce_logits" || op == "mse") check_loss(rng, r, op);
  else TB_THROW(ErrorCode::BadInput, "gradcheck: unknown op '" + op + "'");
  return r;
}

}  // namespace tb
