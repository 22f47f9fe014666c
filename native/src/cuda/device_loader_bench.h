// The loader benchmark with GPU prefetch: batches copied into device memory
// through the DevicePrefetcher ring, the consumer being an empty compute stream.
#pragma once
#include <cstdint>
#include <memory>

#include "core/json.h"
#include "data/loader.h"

namespace tb {

// Throws E_CUDA without a CUDA device (or in builds without CUDA).
Json bench_loader_device(std::shared_ptr<const RecordSource> source, LoaderOptions options, int device, int depth,
                         std::int64_t max_batches, double max_seconds);

}  // namespace tb
