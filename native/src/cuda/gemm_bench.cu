#include "cuda/gemm_bench.h"

#include <vector>

#include "core/device_info.h"
#include "core/errors.h"
#include "core/rng.h"
#include "cuda/allocator.h"
#include "cuda/cublaslt.h"
#include "cuda/cuda_check.h"
#include "cuda/event_timing.h"
#include "cuda/gemm_engine.h"
#include "cuda/kernels.h"

namespace tb {

Json cublaslt_status() {
  const cuda::CublasLtProbe p = cuda::probe_cublaslt();
  Json j = Json::object();
  j.set("loaded", p.loaded);
  j.set("library", p.library.empty() ? Json() : Json(p.library));
  j.set("reason", p.reason.empty() ? Json() : Json(p.reason));
  return j;
}

Json bench_gemm_cuda(int M, int N, int K, const std::string& precision, int reps) {
  const CudaStatus status = cuda_status();
  if (!status.available) TB_THROW(ErrorCode::Cuda, "no CUDA device: " + status.reason);
  if (M <= 0 || N <= 0 || K <= 0 || reps <= 0) TB_THROW(ErrorCode::BadInput, "GEMM sizes and repetitions must be positive");
  const cuda::Precision p = cuda::parse_precision(precision);
  TB_CUDA_CHECK(cudaSetDevice(0));
  std::vector<float> a(static_cast<size_t>(M) * K), b(static_cast<size_t>(K) * N);
  Rng rng(7);
  for (auto& v : a) v = static_cast<float>(rng.uniform(-1, 1));
  for (auto& v : b) v = static_cast<float>(rng.uniform(-1, 1));
  DeviceBuffer dA(0, a.size() * 4), dB(0, b.size() * 4), dC(0, static_cast<size_t>(M) * N * 4);
  TB_CUDA_CHECK(cudaMemcpy(dA.get(), a.data(), a.size() * 4, cudaMemcpyHostToDevice));
  TB_CUDA_CHECK(cudaMemcpy(dB.get(), b.data(), b.size() * 4, cudaMemcpyHostToDevice));
  cudaStream_t s;
  TB_CUDA_CHECK(cudaStreamCreate(&s));
  auto time = [&](auto&& launch) { return cuda::time_launches(s, reps, launch); };
  const float* A = dA.as<float>();
  const float* B = dB.as<float>();
  float* C = dC.as<float>();
  int sms = 0, clock_khz = 0, major = 0;
  TB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  TB_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  TB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  // The own kernel as the engine runs it (split-K where its tiles leave SMs idle), and unsplit beside it.
  const int slices = p == cuda::Precision::Fp32 ? 1 : cuda::gemm_tc_split_slices(M, N, K, sms);
  DeviceBuffer split_ws(0, static_cast<std::size_t>(slices > 1 ? slices : 0) * M * N * 4);
  auto own_with = [&](int z) {
    return time([&] {
      if (p == cuda::Precision::Fp32) cuda::gemm_f32(false, false, M, N, K, 1.f, A, K, B, N, 0.f, C, N, s);
      else cuda::gemm_tc(p == cuda::Precision::Fp16, false, false, M, N, K, 1.f, A, K, B, N, 0.f, C, N, s, z, z > 1 ? split_ws.as<float>() : nullptr);
    });
  };
  const double own = own_with(slices);
  const double own_unsplit = slices > 1 ? own_with(1) : own;
  // cuBLASLt on operands already in the compute precision: its best case, conversion not counted.
  cuda::CublasLt& lt = cuda::CublasLt::instance();
  double lt_seconds = -1;
  std::string why;
  if (lt.loaded()) {
    DeviceBuffer ws(0, std::size_t(32) << 20), hA, hB;
    const void* la = A;
    const void* lb = B;
    int type = 0;
    if (p != cuda::Precision::Fp32) {
      type = p == cuda::Precision::Bf16 ? 1 : 2;
      hA = DeviceBuffer(0, a.size() * 2);
      hB = DeviceBuffer(0, b.size() * 2);
      if (p == cuda::Precision::Bf16) {
        cuda::to_bf16(hA.as<__nv_bfloat16>(), A, static_cast<std::int64_t>(a.size()), s);
        cuda::to_bf16(hB.as<__nv_bfloat16>(), B, static_cast<std::int64_t>(b.size()), s);
      } else {
        cuda::to_f16(hA.as<__half>(), A, static_cast<std::int64_t>(a.size()), s);
        cuda::to_f16(hB.as<__half>(), B, static_cast<std::int64_t>(b.size()), s);
      }
      la = hA.get();
      lb = hB.get();
    }
    bool ok = true;
    lt_seconds = time([&] { ok = lt.matmul(type, false, false, M, N, K, 1.f, la, K, lb, N, 0.f, C, N, ws.get(), ws.bytes(), s, &why) && ok; });
    if (!ok) lt_seconds = -1;
  } else {
    why = lt.reason();
  }
  cudaStreamDestroy(s);

  // Dense FLOP per clock per SM: fp32 FMA units (128 x 2), tensor cores for 16-bit inputs (Ampere 2048, Hopper 4096).
  const double per_sm = p == cuda::Precision::Fp32 ? 256.0 : major >= 9 ? 4096.0 : 2048.0;
  const double flops = 2.0 * M * N * K;
  Json r = Json::object();
  r.set("shape", std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K));
  r.set("precision", cuda::precision_name(p));
  r.set("ownTflops", flops / own / 1e12);
  r.set("ownSlices", slices);
  r.set("ownUnsplitTflops", flops / own_unsplit / 1e12);
  r.set("cublasLtTflops", lt_seconds > 0 ? Json(flops / lt_seconds / 1e12) : Json());
  r.set("cublasLtNote", lt_seconds > 0 ? Json("operands already in the compute precision") : Json(why));
  r.set("theoreticalTflops", per_sm * sms * clock_khz * 1e3 / 1e12);
  r.set("theoreticalNote", "SMs x max clock x dense FLOP/clock/SM (" + std::to_string(static_cast<int>(per_sm)) + ")");
  return r;
}

}  // namespace tb
