// Helpers shared by the GPU parity checks (cuda_parity.cu, cuda_parity_step.cu).
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/rng.h"
#include "cuda/allocator.h"
#include "cuda/cuda_check.h"

namespace tb {
namespace parity {

inline std::vector<float> random_vec(Rng& rng, std::int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<float>(rng.uniform(0.1, 1.0) * (rng.uniform() < 0.5 ? -1 : 1));
  return v;
}

template <typename T>
inline DeviceBuffer upload(const std::vector<T>& host) {
  DeviceBuffer d(0, host.size() * sizeof(T));
  TB_CUDA_CHECK(cudaMemcpy(d.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

inline std::vector<float> download(const DeviceBuffer& d, std::int64_t n) {
  std::vector<float> host(static_cast<size_t>(n));
  TB_CUDA_CHECK(cudaDeviceSynchronize());
  TB_CUDA_CHECK(cudaMemcpy(host.data(), d.get(), static_cast<size_t>(n) * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

inline double max_rel(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) / std::max(static_cast<double>(std::fabs(a[i]) + std::fabs(b[i])), 1e-3));
  return worst;
}

inline Json result(const std::string& op, const std::string& shapes, double err, double tol) {
  Json r = Json::object();
  r.set("op", op);
  r.set("shapes", shapes);
  r.set("maxRelError", err);
  r.set("tolerance", tol);
  return r;
}

inline int pick(Rng& r, int lo, int hi) { return lo + static_cast<int>(r.below(static_cast<std::uint64_t>(hi - lo + 1))); }

// ||a - b|| / ||b||: for reduced-precision results, where single near-zero entries say little.
inline double norm_rel(const std::vector<float>& got, const std::vector<float>& want) {
  double d = 0, w = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    d += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    w += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(d / std::max(w, 1e-30));
}

}  // namespace parity

// The checks of the training step's own kernels (cuda_parity_step.cu); throws E_BAD_INPUT for an unknown op.
Json check_step_op(const std::string& op, Rng& rng);

}  // namespace tb
