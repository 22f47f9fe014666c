// Batch norm on (M, C) rows (HW == 1, cpu/ops_batchnorm_rows.cpp: channels-last activations
// and dense features) against a straightforward double reference, and the same bits at 1, 2 and 3
// threads. Forward train (out, save_mean, save_invstd, running stats), eval, and backward with and
// without a folded ReLU and with din null, for C in {1, 3, 24, 96, 577} and M in {1, 2, 7, 1000, 20736}.
//
// Errors are measured against the magnitude of the terms each value is made of (e.g. dbeta against
// the sum of |g|, out = x*scale + shift against |x*scale| + |shift|), so the tolerance does not
// grow with M: the engine sums 64 rows per block in T and adds the blocks in double, so a sum of M
// float terms is off by at most about 64 * 2^-24 = 3.8e-6 of the sum of their magnitudes, whatever
// M is. Float must be within 2e-5 (that bound, the float deviations from the float-rounded mean and
// a few roundings of the outputs), double within 1e-12. Prints the worst errors; exits 1 on a
// mismatch.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/rng.h"
#include "core/threads.h"
#include "cpu/ops.h"

using namespace tb;

constexpr double kEps = 1e-5, kMomentum = 0.1;

// One shape's inputs, as float (the engine's float run and the reference read the same values).
struct Case {
  std::int64_t M;
  int C;
  std::vector<float> x, dy, relu_out, gamma, beta, running_mean, running_var, dgamma0, dbeta0;
};

static Case make_case(Rng& rng, std::int64_t M, int C) {
  Case k{M, C, {}, {}, {}, {}, {}, {}, {}, {}, {}};
  const std::size_t n = static_cast<std::size_t>(M) * C;
  k.x.resize(n);
  k.dy.resize(n);
  k.relu_out.resize(n);
  std::vector<double> offset(C), spread(C);
  for (int c = 0; c < C; ++c) {
    offset[c] = rng.uniform(-2, 2);  // a mean far from 0 tests the two-pass variance
    spread[c] = rng.uniform(0.5, 2);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const int c = static_cast<int>(i % C);
    k.x[i] = static_cast<float>(offset[c] + spread[c] * rng.uniform(-1, 1));
    k.dy[i] = static_cast<float>(rng.uniform(-1, 1));
    k.relu_out[i] = static_cast<float>(std::fmax(0.0, rng.uniform(-1, 1)));  // half exactly 0, as after a ReLU
  }
  for (auto* v : {&k.gamma, &k.beta, &k.running_mean, &k.dgamma0, &k.dbeta0}) {
    v->resize(C);
    for (float& e : *v) e = static_cast<float>(rng.uniform(-1.5, 1.5));
  }
  k.running_var.resize(C);
  for (float& e : k.running_var) e = static_cast<float>(rng.uniform(0.5, 2));
  return k;
}

template <typename T>
static std::vector<T> as(const std::vector<float>& v) {
  return std::vector<T>(v.begin(), v.end());
}

// What the engine produced for one case, in T.
template <typename T>
struct Result {
  std::vector<T> out, save_mean, save_invstd, running_mean, running_var, eval_out;
  std::vector<T> din, dgamma, dbeta;                       // plain backward
  std::vector<T> din_relu, dgamma_relu, dbeta_relu;        // with relu_out
  std::vector<T> dgamma_nodin, dbeta_nodin;                // relu_out, din null
};

template <typename T>
static Result<T> run_engine(const Case& k, ThreadPool* pool) {
  const std::size_t n = k.x.size();
  const int M = static_cast<int>(k.M), C = k.C;
  const auto x = as<T>(k.x), dy = as<T>(k.dy), relu = as<T>(k.relu_out), gamma = as<T>(k.gamma), beta = as<T>(k.beta);
  Result<T> r;
  r.out.resize(n);
  r.save_mean.resize(C);
  r.save_invstd.resize(C);
  r.running_mean = as<T>(k.running_mean);
  r.running_var = as<T>(k.running_var);
  batchnorm_forward_train(r.out.data(), r.save_mean.data(), r.save_invstd.data(), x.data(), gamma.data(), beta.data(),
                          r.running_mean.data(), r.running_var.data(), M, C, 1, static_cast<T>(kMomentum),
                          static_cast<T>(kEps), pool);
  r.eval_out.resize(n);
  const auto rm = as<T>(k.running_mean), rv = as<T>(k.running_var);
  batchnorm_forward_eval(r.eval_out.data(), x.data(), gamma.data(), beta.data(), rm.data(), rv.data(), M, C, 1,
                         static_cast<T>(kEps), pool);
  r.din.resize(n);
  r.din_relu.resize(n);
  r.dgamma = r.dgamma_relu = r.dgamma_nodin = as<T>(k.dgamma0);
  r.dbeta = r.dbeta_relu = r.dbeta_nodin = as<T>(k.dbeta0);
  batchnorm_backward(r.din.data(), r.dgamma.data(), r.dbeta.data(), dy.data(), x.data(), gamma.data(),
                     r.save_mean.data(), r.save_invstd.data(), M, C, 1, pool, static_cast<const T*>(nullptr));
  batchnorm_backward(r.din_relu.data(), r.dgamma_relu.data(), r.dbeta_relu.data(), dy.data(), x.data(), gamma.data(),
                     r.save_mean.data(), r.save_invstd.data(), M, C, 1, pool, relu.data());
  batchnorm_backward(static_cast<T*>(nullptr), r.dgamma_nodin.data(), r.dbeta_nodin.data(), dy.data(), x.data(),
                     gamma.data(), r.save_mean.data(), r.save_invstd.data(), M, C, 1, pool, relu.data());
  return r;
}

// Worst |got - want| / scale over everything the engine produced, from first principles in double.
template <typename T>
static double reference_error(const Case& k, const Result<T>& r, const char** where) {
  const std::int64_t M = k.M;
  const int C = k.C;
  double worst = 0;
  auto check = [&](double got, double want, double scale, const char* what) {
    const double e = std::fabs(got - want) / scale;
    if (!(e <= worst)) {  // NaN counts as the worst
      worst = std::isnan(e) ? INFINITY : e;
      *where = what;
    }
  };
  auto at = [C](const std::vector<float>& v, std::int64_t m, int c) { return static_cast<double>(v[m * C + c]); };
  for (int c = 0; c < C; ++c) {
    // Forward train.
    double sum = 0, sum_abs = 0;
    for (std::int64_t m = 0; m < M; ++m) sum += at(k.x, m, c), sum_abs += std::fabs(at(k.x, m, c));
    const double mean = sum / M;
    double sq = 0;
    for (std::int64_t m = 0; m < M; ++m) sq += (at(k.x, m, c) - mean) * (at(k.x, m, c) - mean);
    const double var = sq / M, invstd = 1 / std::sqrt(var + kEps), unbiased = M > 1 ? sq / (M - 1) : var;
    const double gamma = k.gamma[c], beta = k.beta[c];
    check(r.save_mean[c], mean, sum_abs / M + 1e-30, "save_mean");
    check(r.save_invstd[c], invstd, invstd, "save_invstd");
    check(r.running_mean[c], (1 - kMomentum) * k.running_mean[c] + kMomentum * mean,
          std::fabs(k.running_mean[c]) + sum_abs / M, "running_mean");
    check(r.running_var[c], (1 - kMomentum) * k.running_var[c] + kMomentum * unbiased,
          (1 - kMomentum) * k.running_var[c] + kMomentum * unbiased, "running_var");
    for (std::int64_t m = 0; m < M; ++m) {
      const double x = at(k.x, m, c);
      check(r.out[m * C + c], (x - mean) * invstd * gamma + beta,
            (std::fabs(x) + std::fabs(mean)) * invstd * std::fabs(gamma) + std::fabs(beta), "out");
    }
    // Eval.
    const double rinv = 1 / std::sqrt(static_cast<double>(k.running_var[c]) + kEps), rmean = k.running_mean[c];
    for (std::int64_t m = 0; m < M; ++m) {
      const double x = at(k.x, m, c);
      check(r.eval_out[m * C + c], (x - rmean) * rinv * gamma + beta,
            (std::fabs(x) + std::fabs(rmean)) * rinv * std::fabs(gamma) + std::fabs(beta), "eval_out");
    }
    // Backward from the engine's saved statistics, with and without the ReLU's mask.
    const double smean = r.save_mean[c], sinv = r.save_invstd[c];
    for (int relu = 0; relu < 2; ++relu) {
      auto grad = [&](std::int64_t m) { return relu && !(at(k.relu_out, m, c) > 0) ? 0.0 : at(k.dy, m, c); };
      double sdy = 0, sdy_abs = 0, sdyx = 0, sdyx_abs = 0;
      for (std::int64_t m = 0; m < M; ++m) {
        const double g = grad(m), d = at(k.x, m, c) - smean;
        sdy += g, sdy_abs += std::fabs(g), sdyx += g * d, sdyx_abs += std::fabs(g * d);
      }
      const double dbeta = k.dbeta0[c] + sdy, dgamma = k.dgamma0[c] + sdyx * sinv;
      const double kk = gamma * sinv / M;
      const std::vector<T>& db = relu ? r.dbeta_relu : r.dbeta;
      const std::vector<T>& dg = relu ? r.dgamma_relu : r.dgamma;
      check(db[c], dbeta, std::fabs(k.dbeta0[c]) + sdy_abs, relu ? "dbeta relu" : "dbeta");
      check(dg[c], dgamma, std::fabs(k.dgamma0[c]) + sdyx_abs * sinv, relu ? "dgamma relu" : "dgamma");
      if (relu) {
        // din null: the same parameter gradients, accumulated the same way.
        check(r.dbeta_nodin[c], dbeta, std::fabs(k.dbeta0[c]) + sdy_abs, "dbeta, din null");
        check(r.dgamma_nodin[c], dgamma, std::fabs(k.dgamma0[c]) + sdyx_abs * sinv, "dgamma, din null");
      }
      const std::vector<T>& din = relu ? r.din_relu : r.din;
      for (std::int64_t m = 0; m < M; ++m) {
        const double d = at(k.x, m, c) - smean;
        const double want = kk * (M * grad(m) - sdy - d * sinv * sdyx * sinv);
        const double scale = std::fabs(kk) * (M * std::fabs(grad(m)) + sdy_abs +
                                              (std::fabs(at(k.x, m, c)) + std::fabs(smean)) * sinv * sdyx_abs * sinv);
        check(din[m * C + c], want, scale + 1e-30, relu ? "din relu" : "din");
      }
    }
  }
  return worst;
}

template <typename T>
static bool same_bits(const Result<T>& a, const Result<T>& b) {
  auto eq = [](const std::vector<T>& u, const std::vector<T>& v) {
    return u.size() == v.size() && std::memcmp(u.data(), v.data(), u.size() * sizeof(T)) == 0;
  };
  return eq(a.out, b.out) && eq(a.save_mean, b.save_mean) && eq(a.save_invstd, b.save_invstd) &&
         eq(a.running_mean, b.running_mean) && eq(a.running_var, b.running_var) && eq(a.eval_out, b.eval_out) &&
         eq(a.din, b.din) && eq(a.dgamma, b.dgamma) && eq(a.dbeta, b.dbeta) && eq(a.din_relu, b.din_relu) &&
         eq(a.dgamma_relu, b.dgamma_relu) && eq(a.dbeta_relu, b.dbeta_relu) && eq(a.dgamma_nodin, b.dgamma_nodin) &&
         eq(a.dbeta_nodin, b.dbeta_nodin);
}

int main() {
  ThreadPool pool1(1), pool2(2), pool3(3);
  Rng rng(15);
  const int Cs[] = {1, 3, 24, 96, 577};
  const std::int64_t Ms[] = {1, 2, 7, 1000, 20736};
  double worst_float = 0, worst_double = 0;
  int checked = 0, checked_double = 0, same = 0;
  for (const int C : Cs) {
    for (const std::int64_t M : Ms) {
      const Case k = make_case(rng, M, C);
      const char* where = "";
      const Result<float> f2 = run_engine<float>(k, &pool2);
      const double ef = reference_error(k, f2, &where);
      worst_float = std::fmax(worst_float, ef);
      if (!(ef < 2e-5)) {
        std::printf("MISMATCH float M=%lld C=%d: %s off by %.2e of its terms\n", static_cast<long long>(M), C, where, ef);
        return 1;
      }
      // Double on all but the largest shapes (its reference runs in the same precision as the engine's).
      if (M * C <= (1 << 21)) {
        const double ed = reference_error(k, run_engine<double>(k, &pool2), &where);
        worst_double = std::fmax(worst_double, ed);
        if (!(ed < 1e-12)) {
          std::printf("MISMATCH double M=%lld C=%d: %s off by %.2e of its terms\n", static_cast<long long>(M), C, where,
                      ed);
          return 1;
        }
        ++checked_double;
      }
      ++checked;
      // The same bits with 1, 2 and 3 threads and without a pool.
      const Result<float> f1 = run_engine<float>(k, &pool1), f3 = run_engine<float>(k, &pool3),
                          f0 = run_engine<float>(k, nullptr);
      if (!same_bits(f1, f2) || !same_bits(f3, f2) || !same_bits(f0, f2)) {
        std::printf("THREADS M=%lld C=%d: results differ between 1, 2 and 3 threads\n", static_cast<long long>(M), C);
        return 1;
      }
      ++same;
    }
  }
  std::printf("checked %d shapes in float: worst error %.2e of the terms (tolerance 2e-5)\n", checked, worst_float);
  std::printf("checked %d shapes in double: worst error %.2e of the terms (tolerance 1e-12)\n", checked_double,
              worst_double);
  std::printf("same bits at 1, 2 and 3 threads on %d shapes\n", same);
  return 0;
}
