// GPU kernels against the CPU backend or a double reference on random (never
// zero) inputs, for `npm run test:gpu`. Each check returns its worst error
// ("maxRelError", NaN when an output was NaN) and the bound it must stay under:
// a few ulps for elementwise results, the fp32 rounding bound for the number of
// terms for accumulations (relative to the sum of their magnitudes,
// parity_metrics.h), 1e-3 to 1e-2 for bf16/fp16; checks of several outputs
// report the worst ratio error / bound against 1.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"

namespace tb {

// Throws E_BAD_INPUT naming the known ops for an unknown one, E_CUDA when the build has no CUDA backend or
// no device is available.
Json cuda_parity(const std::string& op, std::uint64_t seed);
std::vector<std::string> cuda_parity_ops();
// Allocator statistics of device 0 (allocated, reserved, peak, ooms).
Json cuda_memory_stats();

}  // namespace tb
