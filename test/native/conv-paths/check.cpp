// The convolution's three paths (cpu/ops_conv.cpp) on channels-last rows: the dense form for fewer
// input pixels than kernel taps, the indirect kernels at stride 1, and at stride 2 or more (input
// gradient by stride phase). Checks forward, input, weight and bias gradients against a direct
// double-precision convolution on random shapes (channel counts below and above a vector tile),
// in double (to 1e-12) and in float (to 1e-4), with and without the workspace the forward left
// for the backward, with the input gradient written or added to what another consumer left there
// (add_din), and the same float bits with 1, 2 and 3 threads.
// Prints the worst error per path; exits 1 on a mismatch.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/rng.h"
#include "core/threads.h"
#include "cpu/gemm.h"
#include "cpu/ops.h"

using namespace tb;
using Vec = std::vector<double>;

// y (N, OH, OW, O) and, given r = dL/dy, dx (N, H, W, C), dw (O, C, KH, KW), db (O): channels-last, as the engine.
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
          const size_t yi = ((static_cast<size_t>(n) * OH + oh) * OW + ow) * g.O + o;
          double s = b[o];
          for (int c = 0; c < g.C; ++c)
            for (int kh = 0; kh < g.KH; ++kh)
              for (int kw = 0; kw < g.KW; ++kw) {
                const int ih = oh * g.stride - g.pad + kh, iw = ow * g.stride - g.pad + kw;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                const size_t xi = ((static_cast<size_t>(n) * g.H + ih) * g.W + iw) * g.C + c;
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

// Runs the engine's convolution in T and returns the worst relative error over y, dx, dw, db
// (and its results in *out when given).
template <typename T>
static double engine_error(const ConvGeom& g, const Vec& x, const Vec& w, const Vec& b, const Vec& r, bool reuse,
                           bool add_din, ThreadPool* pool, std::vector<T>* out = nullptr) {
  Vec y, dx, dw, db;
  direct(g, x, w, b, r, y, dx, dw, db);
  // The input and the output gradient carry the engine's slack (kConvRowSlack), filled with NaN:
  // the kernels may load past a row's end but must never use what they load there.
  std::vector<T> xt(x.begin(), x.end()), wt(w.begin(), w.end()), bt(b.begin(), b.end()), rt(r.begin(), r.end());
  xt.resize(x.size() + kConvRowSlack, static_cast<T>(NAN));
  rt.resize(r.size() + kConvRowSlack, static_cast<T>(NAN));
  std::vector<T> yt(y.size()), dxt(x.size()), dwt(w.size(), T(0)), dbt(b.size(), T(0));
  if (add_din) {
    // Another consumer's gradient already in din: the result must be it plus this one.
    for (size_t i = 0; i < dx.size(); ++i) {
      dxt[i] = static_cast<T>(0.5 - static_cast<double>(i % 7) / 7);
      dx[i] += static_cast<double>(dxt[i]);
    }
  }
  ConvWorkspace<T> ws;
  conv2d_forward(yt.data(), xt.data(), wt.data(), bt.data(), g, ws, pool);
  conv2d_backward(dxt.data(), dwt.data(), dbt.data(), rt.data(), xt.data(), wt.data(), g, ws, pool, reuse, add_din);
  if (out) {
    *out = yt;
    for (auto* v : {&dxt, &dwt, &dbt}) out->insert(out->end(), v->begin(), v->end());
  }
  const double e = std::fmax(std::fmax(worst(yt, y), worst(dxt, dx)), std::fmax(worst(dwt, dw), worst(dbt, db)));
  return std::isnan(e) ? INFINITY : e;
}

enum class Path { Dense, Stride1, Strided };

static Path path_of(const ConvGeom& g) {
  return conv_is_dense(g) ? Path::Dense : g.stride == 1 ? Path::Stride1 : Path::Strided;
}

// A channel count: mostly small, a third of the time past a 32-wide vector tile (tails, several panels).
static int channels(Rng& rng) {
  return rng.uniform() < 0.35 ? 17 + static_cast<int>(rng.below(60)) : 1 + static_cast<int>(rng.below(9));
}

int main() {
  std::printf("kernel %s\n", gemm_kernel_name().c_str());
  ThreadPool pool(2), pool1(1), pool3(3);
  Rng rng(2026);
  const char* names[] = {"dense", "stride-1", "strided"};
  double worst_double[3] = {}, worst_float[3] = {};
  int checked[3] = {};
  int large = 0;
  constexpr int kPerPath = 24;
  for (int trial = 0; trial < 100000; ++trial) {
    ConvGeom g{};
    const bool small = trial % 2 == 0;  // half the draws aim at the dense path
    g.KH = small ? 2 + static_cast<int>(rng.below(3)) : 1 + static_cast<int>(rng.below(3));
    g.KW = rng.uniform() < 0.7 ? g.KH : 1 + static_cast<int>(rng.below(4));
    g.H = 1 + static_cast<int>(rng.below(small ? 3 : 6));
    g.W = 1 + static_cast<int>(rng.below(small ? 3 : 6));
    g.pad = static_cast<int>(rng.below(static_cast<std::uint64_t>(std::min(g.KH, g.KW))));
    g.stride = rng.uniform() < 0.6 ? 1 : 2;
    g.N = 1 + static_cast<int>(rng.below(40));
    g.C = channels(rng);
    g.O = channels(rng);
    const bool large_draw = trial % 7 == 3 && !small;
    if (large_draw) {
      // Enough output pixels (>= 16384) for the weight gradient's batch slices.
      g.N = 420 + static_cast<int>(rng.below(60));
      g.H = g.W = 7;
      g.stride = 1;
      g.KH = g.KW = 3;
      g.pad = 1;
      g.C = std::min(g.C, 40);
      g.O = std::min(g.O, 40);
    }
    if (g.H + 2 * g.pad < g.KH || g.W + 2 * g.pad < g.KW) continue;
    const int p = static_cast<int>(path_of(g));
    if (checked[p] == kPerPath) continue;
    Vec x(static_cast<size_t>(g.C) * g.N * g.H * g.W), w(static_cast<size_t>(g.O) * g.C * g.KH * g.KW), b(g.O),
        r(static_cast<size_t>(g.O) * g.N * g.OH() * g.OW());
    for (Vec* v : {&x, &w, &b, &r})
      for (double& e : *v) e = rng.uniform(-1, 1);
    const bool reuse = checked[p] % 2 == 0, add_din = checked[p] % 4 >= 2;
    const double ed = engine_error<double>(g, x, w, b, r, reuse, add_din, &pool);
    std::vector<float> bits2, bits1, bits3;
    const double ef = engine_error<float>(g, x, w, b, r, reuse, add_din, &pool, &bits2);
    engine_error<float>(g, x, w, b, r, reuse, add_din, &pool1, &bits1);
    engine_error<float>(g, x, w, b, r, reuse, add_din, &pool3, &bits3);
    if (bits1 != bits2 || bits3 != bits2) {
      std::printf("THREADS %s N=%d C=%d H=%d W=%d O=%d k=%dx%d stride=%d pad=%d: float results differ between 1, 2 and 3 threads\n",
                  names[p], g.N, g.C, g.H, g.W, g.O, g.KH, g.KW, g.stride, g.pad);
      return 1;
    }
    worst_double[p] = std::fmax(worst_double[p], ed);
    worst_float[p] = std::fmax(worst_float[p], ef);
    if (!(ed < 1e-12) || !(ef < 1e-4)) {
      std::printf("MISMATCH %s N=%d C=%d H=%d W=%d O=%d k=%dx%d stride=%d pad=%d reuse=%d add_din=%d: double %.2e float %.2e\n",
                  names[p], g.N, g.C, g.H, g.W, g.O, g.KH, g.KW, g.stride, g.pad, reuse, add_din, ed, ef);
      return 1;
    }
    ++checked[p];
    large += large_draw;
    if (checked[0] == kPerPath && checked[1] == kPerPath && checked[2] == kPerPath) break;
  }
  std::printf("of which %d with at least 16384 output pixels\n", large);
  bool all = large >= 2;
  for (int p = 0; p < 3; ++p) {
    std::printf("checked %d %s convolutions: worst relative error double %.2e, float %.2e\n", checked[p], names[p],
                worst_double[p], worst_float[p]);
    all &= checked[p] == kPerPath;
  }
  return all ? 0 : 1;
}
