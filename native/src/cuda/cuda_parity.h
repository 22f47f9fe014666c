// GPU kernels against the CPU backend on random (never zero) inputs, for
// `npm run test:gpu`. Each check returns the worst relative error and the
// tolerance of its precision (fp32 ~1e-5, bf16/fp16 1e-2).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"

namespace tb {

// Throws E_CUDA when the build has no CUDA backend or no device is available.
Json cuda_parity(const std::string& op, std::uint64_t seed);
std::vector<std::string> cuda_parity_ops();
// Allocator statistics of device 0 (allocated, reserved, peak, ooms).
Json cuda_memory_stats();

}  // namespace tb
