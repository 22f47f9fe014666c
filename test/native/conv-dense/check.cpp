// Convolutions on fewer input pixels than kernel taps run in a dense form (cpu/ops_conv.cpp):
// this checks its forward, input, weight and bias gradients against a direct double-precision
// convolution on random shapes, in double (to 1e-12) and in float (to 1e-4), with and without
// the workspace the forward left for the backward. Prints the worst error; exits 1 on a mismatch.
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/rng.h"
#include "core/threads.h"
#include "cpu/ops.h"

using namespace tb;
using Vec = std::vector<double>;

// y (O, N, OH, OW) and, given r = dL/dy, dx (C, N, H, W), dw (O, C, KH, KW), db (O): channel-major, as the engine.
static void direct(const ConvGeom& g, const Vec& x, const Vec& w, const Vec& b, const Vec& r, Vec& y, Vec& dx, Vec& dw,
                   Vec& db) {
  const int OH = g.OH(), OW = g.OW();
  y.assign(static_cast<size_t>(g.O) * g.N * OH * OW, 0.0);
  dx.assign(x.size(), 0.0);
  dw.assign(w.size(), 0.0);
  db.assign(g.O, 0.0);
  for (int o = 0; o < g.O; ++o)
    for (int n = 0; n < g.N; ++n)
      for (int oh = 0; oh < OH; ++oh)
        for (int ow = 0; ow < OW; ++ow) {
          const size_t yi = ((static_cast<size_t>(o) * g.N + n) * OH + oh) * OW + ow;
          double s = b[o];
          for (int c = 0; c < g.C; ++c)
            for (int kh = 0; kh < g.KH; ++kh)
              for (int kw = 0; kw < g.KW; ++kw) {
                const int ih = oh * g.stride - g.pad + kh, iw = ow * g.stride - g.pad + kw;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                const size_t xi = ((static_cast<size_t>(c) * g.N + n) * g.H + ih) * g.W + iw;
                const size_t wi = ((static_cast<size_t>(o) * g.C + c) * g.KH + kh) * g.KW + kw;
                s += w[wi] * x[xi];
                dx[xi] += w[wi] * r[yi];
                dw[wi] += x[xi] * r[yi];
              }
          y[yi] = s;
          db[o] += r[yi];
        }
}

template <typename T>
static double worst(const std::vector<T>& got, const Vec& want) {
  double e = 0;
  for (size_t i = 0; i < want.size(); ++i) e = std::fmax(e, std::fabs(got[i] - want[i]) / (std::fabs(want[i]) + 1.0));
  return got.size() == want.size() ? e : INFINITY;
}

// Runs the engine's convolution in T and returns the worst relative error over y, dx, dw, db.
template <typename T>
static double engine_error(const ConvGeom& g, const Vec& x, const Vec& w, const Vec& b, const Vec& r, bool reuse,
                           ThreadPool* pool) {
  Vec y, dx, dw, db;
  direct(g, x, w, b, r, y, dx, dw, db);
  std::vector<T> xt(x.begin(), x.end()), wt(w.begin(), w.end()), bt(b.begin(), b.end()), rt(r.begin(), r.end());
  std::vector<T> yt(y.size()), dxt(x.size()), dwt(w.size(), T(0)), dbt(b.size(), T(0));
  ConvWorkspace<T> ws;
  conv2d_forward(yt.data(), xt.data(), wt.data(), bt.data(), g, ws, pool);
  conv2d_backward(dxt.data(), dwt.data(), dbt.data(), rt.data(), xt.data(), wt.data(), g, ws, pool, reuse);
  return std::fmax(std::fmax(worst(yt, y), worst(dxt, dx)), std::fmax(worst(dwt, dw), worst(dbt, db)));
}

int main() {
  ThreadPool pool(2);
  Rng rng(2026);
  double worst_double = 0, worst_float = 0;
  int checked = 0;
  for (int trial = 0; checked < 40 && trial < 10000; ++trial) {
    ConvGeom g{};
    g.KH = 2 + static_cast<int>(rng.below(3));
    g.KW = rng.uniform() < 0.7 ? g.KH : 2 + static_cast<int>(rng.below(3));
    g.H = 1 + static_cast<int>(rng.below(3));
    g.W = 1 + static_cast<int>(rng.below(3));
    g.pad = static_cast<int>(rng.below(static_cast<std::uint64_t>(std::min(g.KH, g.KW))));
    g.stride = 1 + static_cast<int>(rng.below(2));
    g.N = 1 + static_cast<int>(rng.below(40));
    g.C = 1 + static_cast<int>(rng.below(9));
    g.O = 1 + static_cast<int>(rng.below(9));
    if (g.H + 2 * g.pad < g.KH || g.W + 2 * g.pad < g.KW || !conv_is_dense(g)) continue;
    Vec x(static_cast<size_t>(g.C) * g.N * g.H * g.W), w(static_cast<size_t>(g.O) * g.C * g.KH * g.KW), b(g.O),
        r(static_cast<size_t>(g.O) * g.N * g.OH() * g.OW());
    for (Vec* v : {&x, &w, &b, &r})
      for (double& e : *v) e = rng.uniform(-1, 1);
    const bool reuse = checked % 2 == 0;
    const double ed = engine_error<double>(g, x, w, b, r, reuse, &pool);
    const double ef = engine_error<float>(g, x, w, b, r, reuse, &pool);
    worst_double = std::fmax(worst_double, ed);
    worst_float = std::fmax(worst_float, ef);
    if (!(ed < 1e-12) || !(ef < 1e-4)) {
      std::printf("MISMATCH N=%d C=%d H=%d W=%d O=%d k=%dx%d stride=%d pad=%d reuse=%d: double %.2e float %.2e\n", g.N,
                  g.C, g.H, g.W, g.O, g.KH, g.KW, g.stride, g.pad, reuse, ed, ef);
      return 1;
    }
    ++checked;
  }
  std::printf("checked %d dense convolutions: worst relative error double %.2e, float %.2e\n", checked, worst_double,
              worst_float);
  return checked == 40 ? 0 : 1;
}
