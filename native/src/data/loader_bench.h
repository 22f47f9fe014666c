// Measures a loader setting: how fast batches arrive when the consumer does
// nothing but touch the data (the upper bound training can see).
#pragma once
#include <atomic>
#include <memory>
#include <vector>

#include "core/json.h"
#include "data/loader.h"

namespace tb {

// What a benchmark loop counted; turned into the reported figures by loader_stats().
struct LoaderRun {
  std::int64_t batches = 0, records = 0, bytes = 0;
  double seconds = 0;
  std::vector<double> gather_seconds;  // per batch, as the workers measured it
};

// samples/s, MB/s, batch assembly p50/p95 (ms), time and share the consumer waited, worker efficiency.
Json loader_stats(const LoaderRun& run, const Loader& loader, int workers);

// Runs batches until max_batches or max_seconds; returns samples/s, MB/s,
// batch assembly latency p50/p95 (ms), the time the consumer was blocked, and
// worker efficiency (throughput per worker against one worker's assembly rate).
Json bench_loader(std::shared_ptr<const RecordSource> source, const LoaderOptions& options, std::int64_t max_batches,
                  double max_seconds, const std::atomic<bool>& cancel);

// Reads files front to back in 8 MiB blocks: the raw sequential bandwidth a loader competes with.
Json sequential_read(const std::vector<std::string>& files);

}  // namespace tb
