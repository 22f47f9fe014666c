// Helpers shared by the GPU parity checks (cuda_parity.cu, cuda_parity_step.cu).
#pragma once
#include <string>
#include <vector>

#include "core/json.h"
#include "core/rng.h"
#include "cuda/allocator.h"
#include "cuda/cuda_check.h"
#include "cuda/parity_cases.h"

namespace tb {
namespace parity {

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

inline Json result(const std::string& op, const std::string& shapes, double err, double tol) {
  Json r = Json::object();
  r.set("op", op);
  r.set("shapes", shapes);
  r.set("maxRelError", err);
  r.set("tolerance", tol);
  return r;
}

inline Json result(const std::string& op, const std::string& shapes, const Score& s) { return result(op, shapes, s.error, s.tolerance); }

// A named check: draws its case from rng and returns result(...).
struct Check {
  const char* op;
  Json (*run)(const std::string& op, Rng& rng);
};

}  // namespace parity

// The checks of the training step's kernels, GEMM paths and runtime pieces (cuda_parity_step.cu).
const std::vector<parity::Check>& step_checks();

}  // namespace tb
