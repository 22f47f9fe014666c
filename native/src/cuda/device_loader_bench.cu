#include "cuda/device_loader_bench.h"

#include <chrono>

#include "core/device_info.h"
#include "core/errors.h"
#include "cuda/cuda_check.h"
#include "cuda/device_prefetcher.h"
#include "data/loader_bench.h"

namespace tb {

Json bench_loader_device(std::shared_ptr<const RecordSource> source, LoaderOptions options, int device, int depth,
                         std::int64_t max_batches, double max_seconds) {
  const CudaStatus status = cuda_status();
  if (!status.available) TB_THROW(ErrorCode::Cuda, "no CUDA device: " + status.reason);
  if (device >= static_cast<int>(status.devices.size()))
    TB_THROW(ErrorCode::BadInput, "cuda:" + std::to_string(device) + " does not exist (" + std::to_string(status.devices.size()) + " device(s))");
  TB_CUDA_CHECK(cudaSetDevice(device));
  options.pinned = true;
  Loader loader(std::move(source), options);
  cudaStream_t compute;
  TB_CUDA_CHECK(cudaStreamCreate(&compute));
  LoaderRun run;
  {
    DevicePrefetcher prefetch(loader, device, depth, compute);
    const auto t0 = std::chrono::steady_clock::now();
    for (int epoch = 0;; ++epoch) {
      loader.start_epoch(epoch);
      prefetch.start_epoch();
      bool stop = false;
      while (const std::optional<DeviceBatch> b = prefetch.next()) {
        prefetch.release(*b);
        ++run.batches;
        run.records += b->size;
        run.gather_seconds.push_back(b->gather_seconds);
        for (size_t f = 0; f < b->fields.size(); ++f) run.bytes += b->size * loader.loaded_field(static_cast<int>(f)).record_bytes();
        run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (run.batches >= max_batches || run.seconds >= max_seconds) {
          stop = true;
          break;
        }
      }
      if (stop || loader.batches_per_epoch() == 0) break;
    }
    TB_CUDA_CHECK(cudaStreamSynchronize(compute));  // every copy has landed before the clock stops
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  TB_CUDA_CHECK(cudaStreamDestroy(compute));
  Json r = loader_stats(run, loader, options.workers);
  r.set("pinned", loader.pinned());
  r.set("device", "cuda:" + std::to_string(device));
  return r;
}

}  // namespace tb
