// Host-to-device copy rate from page-locked memory: the copy floor of the
// optimisation wizard's limits (issue 26), measured the way the engine's
// prefetch ring copies a batch (one cudaMemcpyAsync from pinned memory on a
// stream of its own).
#pragma once
#include <cstdint>

#include "core/json.h"

namespace tb {

// Copies `bytes` from pinned host memory to `device` `reps` times after one warm-up, each copy timed
// by events; then copies the buffer back and compares it, so a rate is never reported for a copy that
// lost bytes. { bytes, reps, bestSeconds, medianSeconds, bestMBps, medianMBps, emulated, how }.
// E_BAD_INPUT for a size outside 1 byte..1 GiB or reps outside 1..100, E_CUDA without a usable device.
Json bench_h2d_copy(int device, std::int64_t bytes, int reps);

}  // namespace tb
