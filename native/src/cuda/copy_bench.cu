#include "cuda/copy_bench.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/device_info.h"
#include "core/errors.h"
#include "cuda/cuda_check.h"

namespace tb {
namespace {

constexpr std::int64_t kMaxBytes = std::int64_t(1) << 30;
constexpr int kMaxReps = 100;

// Everything the benchmark holds, released on every path (a failed copy must not leak pinned memory,
// which the loader's ring needs).
struct CopyRig {
  void* host = nullptr;
  void* back = nullptr;
  void* dev = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, end = nullptr;
  ~CopyRig() {
    if (start) cudaEventDestroy(start);
    if (end) cudaEventDestroy(end);
    if (stream) cudaStreamDestroy(stream);
    if (dev) cudaFree(dev);
    if (back) cudaFreeHost(back);
    if (host) cudaFreeHost(host);
  }
};

}  // namespace

Json bench_h2d_copy(int device, std::int64_t bytes, int reps) {
  if (bytes < 1 || bytes > kMaxBytes)
    TB_THROW(ErrorCode::BadInput, "copy size " + std::to_string(bytes) + " bytes is outside 1 byte to 1 GiB");
  if (reps < 1 || reps > kMaxReps) TB_THROW(ErrorCode::BadInput, "copy repetitions " + std::to_string(reps) + " are outside 1 to 100");
  const CudaStatus status = cuda_status();
  if (!status.available) TB_THROW(ErrorCode::Cuda, "no CUDA device: " + status.reason);
  if (device < 0 || device >= static_cast<int>(status.devices.size()))
    TB_THROW(ErrorCode::BadInput, "there is no cuda:" + std::to_string(device) + " (" + std::to_string(status.devices.size()) + " device(s))");
  TB_CUDA_CHECK(cudaSetDevice(device));
  const auto n = static_cast<std::size_t>(bytes);
  CopyRig rig;
  TB_CUDA_CHECK(cudaHostAlloc(&rig.host, n, cudaHostAllocDefault));
  TB_CUDA_CHECK(cudaHostAlloc(&rig.back, n, cudaHostAllocDefault));
  // Plain cudaMalloc, not the training allocator: the probe must not leave a cached block behind.
  TB_CUDA_CHECK(cudaMalloc(&rig.dev, n));
  TB_CUDA_CHECK(cudaStreamCreateWithFlags(&rig.stream, cudaStreamNonBlocking));
  TB_CUDA_CHECK(cudaEventCreate(&rig.start));
  TB_CUDA_CHECK(cudaEventCreate(&rig.end));
  auto* h = static_cast<unsigned char*>(rig.host);
  for (std::size_t i = 0; i < n; ++i) h[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);

  // The warm-up maps the pages and wakes the copy engine; then each copy alone between two events.
  TB_CUDA_CHECK(cudaMemcpyAsync(rig.dev, rig.host, n, cudaMemcpyHostToDevice, rig.stream));
  TB_CUDA_CHECK(cudaStreamSynchronize(rig.stream));
  std::vector<double> seconds;
  for (int r = 0; r < reps; ++r) {
    TB_CUDA_CHECK(cudaEventRecord(rig.start, rig.stream));
    TB_CUDA_CHECK(cudaMemcpyAsync(rig.dev, rig.host, n, cudaMemcpyHostToDevice, rig.stream));
    TB_CUDA_CHECK(cudaEventRecord(rig.end, rig.stream));
    TB_CUDA_CHECK(cudaEventSynchronize(rig.end));
    float ms = 0;
    TB_CUDA_CHECK(cudaEventElapsedTime(&ms, rig.start, rig.end));
    seconds.push_back(std::max(1e-7, static_cast<double>(ms) / 1000.0));  // events resolve ~0.5 us
  }
  TB_CUDA_CHECK(cudaMemcpyAsync(rig.back, rig.dev, n, cudaMemcpyDeviceToHost, rig.stream));
  TB_CUDA_CHECK(cudaStreamSynchronize(rig.stream));
  if (std::memcmp(rig.back, rig.host, n) != 0)
    TB_THROW(ErrorCode::Cuda, "the host-to-device copy benchmark read back different bytes from cuda:" + std::to_string(device));

  std::sort(seconds.begin(), seconds.end());
  const double best = seconds.front();
  const double median = seconds.size() % 2 ? seconds[seconds.size() / 2] : (seconds[seconds.size() / 2 - 1] + seconds[seconds.size() / 2]) / 2;
  Json r = Json::object();
  r.set("bytes", static_cast<double>(bytes));
  r.set("reps", static_cast<double>(reps));
  r.set("bestSeconds", best);
  r.set("medianSeconds", median);
  r.set("bestMBps", static_cast<double>(bytes) / best / 1e6);
  r.set("medianMBps", static_cast<double>(bytes) / median / 1e6);
  r.set("emulated", status.emulated);
  r.set("how", std::string(status.emulated ? "emulated device (CPU memcpy), not a GPU's rate: " : "") + "pinned cudaMemcpyAsync to cuda:" +
                   std::to_string(device) + ", best of " + std::to_string(reps) + " after a warm-up, timed by events");
  return r;
}

}  // namespace tb
