#include "data/loader_bench.h"

#include <algorithm>
#include <chrono>

#include "core/errors.h"
#include "data/files.h"

namespace tb {

using Clock = std::chrono::steady_clock;

static double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

Json bench_loader(std::shared_ptr<const RecordSource> source, const LoaderOptions& options, std::int64_t max_batches,
                  double max_seconds, const std::atomic<bool>& cancel) {
  Loader loader(std::move(source), options);
  if (loader.batches_per_epoch() < 1) TB_THROW(ErrorCode::BadInput, "batch size is larger than the records drawn per epoch");
  std::vector<double> latencies;
  std::int64_t records = 0, bytes = 0, batches = 0;
  std::uint64_t touch = 0;
  int epoch = 0;
  const auto t0 = Clock::now();
  loader.start_epoch(epoch);
  for (;;) {
    if (cancel.load()) TB_THROW(ErrorCode::Cancelled, "the loader benchmark was cancelled");
    const Batch* b = loader.next();
    if (!b) {
      loader.start_epoch(++epoch);
      continue;
    }
    latencies.push_back(b->gather_seconds);
    records += b->size;
    for (const auto& d : b->data) {
      const std::int64_t n = static_cast<std::int64_t>(b->size) * static_cast<std::int64_t>(d.size()) / options.batch_size;
      bytes += n;
      for (std::int64_t i = 0; i < n; i += 64) touch += d[static_cast<size_t>(i)];  // make sure the bytes are really there
    }
    ++batches;
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    if (batches >= max_batches || elapsed >= max_seconds) break;
  }
  LoaderRun run{batches, records, bytes, std::chrono::duration<double>(Clock::now() - t0).count(), latencies};
  Json r = loader_stats(run, loader, options.workers);
  r.set("checksum", static_cast<double>(touch % 1000003));
  return r;
}

Json loader_stats(const LoaderRun& run, const Loader& loader, int workers) {
  double gather_total = 0;
  for (double l : run.gather_seconds) gather_total += l;
  const double one_worker_rate = gather_total > 0 ? run.records / gather_total : 0;  // records/s of one busy worker
  const double seconds = run.seconds > 0 ? run.seconds : 1e-9;
  Json r = Json::object();
  r.set("batches", run.batches);
  r.set("records", run.records);
  r.set("bytes", run.bytes);
  r.set("seconds", run.seconds);
  r.set("samplesPerSec", run.records / seconds);
  r.set("mbPerSec", run.bytes / seconds / 1e6);
  r.set("latencyP50Ms", 1000 * percentile(run.gather_seconds, 0.5));
  r.set("latencyP95Ms", 1000 * percentile(run.gather_seconds, 0.95));
  r.set("waitedSeconds", loader.waited_seconds());
  r.set("waitedFraction", loader.waited_seconds() / seconds);
  r.set("workerEfficiency", one_worker_rate > 0 ? (run.records / seconds) / (std::max(1, workers) * one_worker_rate) : 0.0);
  return r;
}

Json sequential_read(const std::vector<std::string>& files) {
  std::vector<char> buf(8 << 20);
  std::int64_t bytes = 0;
  const auto t0 = Clock::now();
  for (const auto& path : files) {
    const FileReader f(path);  // UTF-8 paths on Windows too
    for (std::int64_t at = 0; at < f.size(); at += static_cast<std::int64_t>(buf.size())) {
      const std::int64_t n = std::min<std::int64_t>(static_cast<std::int64_t>(buf.size()), f.size() - at);
      f.read_at(at, n, reinterpret_cast<std::uint8_t*>(buf.data()));
      bytes += n;
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  Json r = Json::object();
  r.set("bytes", bytes);
  r.set("seconds", seconds);
  r.set("mbPerSec", seconds > 0 ? bytes / seconds / 1e6 : 0.0);
  return r;
}

}  // namespace tb
