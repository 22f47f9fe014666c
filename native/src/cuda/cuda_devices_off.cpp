// Built when the CUDA backend is off (no nvcc, no NVIDIA GPU at build time, or TB_WITH_CUDA=OFF).
#include "core/device_info.h"

namespace tb {

CudaStatus cuda_status() {
  CudaStatus status;
  status.compiled = false;
  status.reason = "this build has no CUDA backend (built without nvcc, with no NVIDIA GPU found, or with TB_WITH_CUDA=OFF): a source build with nvcc builds it with npm run rebuild:native";
  return status;
}

}  // namespace tb

// Without the CUDA backend the GPU checks have nothing to run on; they say so.
#include "core/errors.h"
#include "cuda/cuda_parity.h"

namespace tb {

Json cuda_parity(const std::string& op, std::uint64_t) {
  TB_THROW(ErrorCode::Cuda, "cannot check '" + op + "' on the GPU: this build has no CUDA backend");
}
std::vector<std::string> cuda_parity_ops() { return {}; }
Json cuda_memory_stats() { TB_THROW(ErrorCode::Cuda, "this build has no CUDA backend"); }

}  // namespace tb

#include "data/host_buffer.h"

namespace tb {

// No CUDA: batches live in ordinary memory.
void* pinned_alloc(std::size_t) { return nullptr; }
void pinned_free(void*) {}

}  // namespace tb

#include "cuda/device_loader_bench.h"

namespace tb {

Json bench_loader_device(std::shared_ptr<const RecordSource>, LoaderOptions, int, int, std::int64_t, double) {
  TB_THROW(ErrorCode::Cuda, "GPU prefetch needs the CUDA backend, which this build does not have");
}

}  // namespace tb

#include "cuda/cuda_backend.h"

namespace tb {

std::unique_ptr<StepBackend> make_cuda_backend(Model&, int device, const TrainOptions&, std::uint64_t) {
  TB_THROW(ErrorCode::Cuda, "cannot train on cuda:" + std::to_string(device) + ": this build has no CUDA backend");
}

}  // namespace tb

#include "cuda/gemm_bench.h"

namespace tb {

Json bench_gemm_cuda(int, int, int, const std::string&, int) {
  TB_THROW(ErrorCode::Cuda, "GPU GEMM benchmarks need the CUDA backend, which this build does not have");
}

Json cublaslt_status() {
  Json j = Json::object();
  j.set("loaded", false);
  j.set("library", Json());
  j.set("reason", "this build has no CUDA backend");
  return j;
}

}  // namespace tb

#include "cuda/copy_bench.h"

namespace tb {

Json bench_h2d_copy(int, std::int64_t, int) {
  TB_THROW(ErrorCode::Cuda, "the host-to-device copy benchmark needs the CUDA backend, which this build does not have");
}

}  // namespace tb
