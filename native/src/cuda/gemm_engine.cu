#include "cuda/gemm_engine.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <mutex>

#include "core/errors.h"
#include "cuda/cublaslt.h"
#include "cuda/cuda_check.h"
#include "cuda/event_timing.h"
#include "cuda/kernels.h"

namespace tb::cuda {
namespace {

constexpr std::size_t kLtWorkspace = std::size_t(32) << 20;  // cuBLASLt's recommendation for Hopper
// Split-K partials: a weight gradient's 96 x 936 in 32 slices is 11 MiB; a GEMM that would need more runs unsplit.
constexpr std::size_t kSplitWorkspaceMax = std::size_t(32) << 20;

// Elements a row-major (rows, cols) matrix with leading dimension ld spans.
std::int64_t extent(int rows, int cols, int ld) { return rows > 0 ? static_cast<std::int64_t>(rows - 1) * ld + cols : 0; }

}  // namespace

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::Fp32;
  if (name == "bf16") return Precision::Bf16;
  if (name == "fp16") return Precision::Fp16;
  TB_THROW(ErrorCode::BadInput, "precision must be fp32, bf16 or fp16, got '" + name + "'");
}

const char* precision_name(Precision p) { return p == Precision::Fp32 ? "fp32" : p == Precision::Bf16 ? "bf16" : "fp16"; }

GemmEngine::GemmEngine(int device, Precision precision, cudaStream_t stream) : device_(device), precision_(precision), stream_(stream) {
  if (lt_workspace_bytes() > 0) workspace_ = DeviceBuffer(device, kLtWorkspace, stream);
  TB_CUDA_CHECK(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, device));
}

GemmEngine::~GemmEngine() = default;

std::int64_t GemmEngine::lt_workspace_bytes() { return CublasLt::instance().loaded() ? static_cast<std::int64_t>(kLtWorkspace) : 0; }

std::int64_t GemmEngine::workspace_bytes() const {
  return static_cast<std::int64_t>(workspace_.bytes() + half_a_.bytes() + half_b_.bytes() + split_.bytes());
}

std::int64_t GemmEngine::split_bytes(int M, int N, int K, int sms) {
  const int slices = gemm_tc_split_slices(M, N, K, sms);
  const std::size_t bytes = static_cast<std::size_t>(slices) * M * N * sizeof(float);
  return slices < 2 || bytes > kSplitWorkspaceMax ? 0 : static_cast<std::int64_t>(bytes);
}

// The K slices for the own tensor-core kernel, with their workspace grown to fit. Under graph capture
// nothing may be allocated: the warm-up steps before it have grown it for the step's shapes already.
int GemmEngine::split_slices(int M, int N, int K) {
  const std::size_t bytes = static_cast<std::size_t>(split_bytes(M, N, K, sms_));
  if (bytes == 0) return 1;
  if (split_.bytes() < bytes) {
    if (capturing_) return 1;
    split_ = DeviceBuffer();
    split_ = DeviceBuffer(device_, bytes, stream_);
    ++buffer_moves_;
  }
  return gemm_tc_split_slices(M, N, K, sms_);
}

void GemmEngine::own(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                     float* C, int ldc) {
  if (precision_ == Precision::Fp32) return gemm_f32(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream_);
  const int slices = split_slices(M, N, K);
  gemm_tc(precision_ == Precision::Fp16, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream_, slices,
          slices > 1 ? split_.as<float>() : nullptr);
}

// A rounded copy of an operand for cuBLASLt's bf16/fp16 path (its own kernel rounds while loading instead).
void* GemmEngine::half_copy(int which, const float* src, std::int64_t n) {
  DeviceBuffer& buf = which == 0 ? half_a_ : half_b_;
  const std::size_t bytes = static_cast<std::size_t>(n) * 2;
  if (buf.bytes() < bytes) {
    if (capturing_) TB_THROW(ErrorCode::Internal, "a GEMM operand grew during CUDA graph capture");
    buf = DeviceBuffer();
    buf = DeviceBuffer(device_, bytes, stream_);
    ++buffer_moves_;
  }
  if (precision_ == Precision::Bf16) to_bf16(buf.as<__nv_bfloat16>(), src, n, stream_);
  else to_f16(buf.as<__half>(), src, n, stream_);
  return buf.get();
}

bool GemmEngine::lt(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                    float* C, int ldc, std::string* why) {
  CublasLt& lib = CublasLt::instance();
  if (precision_ == Precision::Fp32)
    return lib.matmul(0, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, workspace_.get(), workspace_.bytes(), stream_, why);
  const void* a = half_copy(0, A, ta ? extent(K, M, lda) : extent(M, K, lda));
  const void* b = half_copy(1, B, tb ? extent(N, K, ldb) : extent(K, N, ldb));
  return lib.matmul(precision_ == Precision::Bf16 ? 1 : 2, ta, tb, M, N, K, alpha, a, lda, b, ldb, beta, C, ldc, workspace_.get(),
                    workspace_.bytes(), stream_, why);
}

GemmEngine::Choice GemmEngine::choose(const Key& k, const float* A, int lda, const float* B, int ldb) {
  Choice c;
  if (capturing_) {
    c.why = "first seen during CUDA graph capture, where nothing can be timed";
    return c;
  }
  if (!CublasLt::instance().loaded()) {
    c.why = "cuBLASLt not loaded: " + CublasLt::instance().reason();
    return c;
  }
  // Both candidates write the same scratch output (beta 0), so timing never disturbs real results.
  DeviceBuffer scratch(device_, static_cast<std::size_t>(k.M) * k.N * sizeof(float), stream_);
  float* C = scratch.as<float>();
  auto time = [&](auto&& launch) { return 1e6 * time_launches(stream_, 5, launch); };
  std::string why;
  bool lt_ok = lt(k.ta, k.tb, k.M, k.N, k.K, 1.f, A, lda, B, ldb, 0.f, C, k.N, &why);
  c.own_us = time([&] { own(k.ta, k.tb, k.M, k.N, k.K, 1.f, A, lda, B, ldb, 0.f, C, k.N); });
  if (lt_ok) c.lt_us = time([&] { lt(k.ta, k.tb, k.M, k.N, k.K, 1.f, A, lda, B, ldb, 0.f, C, k.N, &why); });
  c.cublaslt = lt_ok && c.lt_us < c.own_us;
  c.why = !lt_ok ? why : c.cublaslt ? "cuBLASLt faster" : "own kernel faster";
  return c;
}

void GemmEngine::run(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                     float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
  if (path_ == GemmPath::Own) return own(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (path_ == GemmPath::CublasLt) {
    std::string why = CublasLt::instance().loaded() ? "" : "not loaded: " + CublasLt::instance().reason();
    if (why.empty() && lt(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, &why)) return;
    TB_THROW(ErrorCode::Cuda, "cuBLASLt was required for the " + std::string(precision_name(precision_)) + " GEMM " + std::to_string(M) + "x" +
                                  std::to_string(N) + "x" + std::to_string(K) + " but cannot run it: " + why);
  }
  const Key key{ta, tb, M, N, K};
  auto it = choices_.find(key);
  if (it == choices_.end()) {
    // Decided once per process, device and precision: later runs reuse it, so two runs of one
    // configuration take the same GEMM paths and give the same bits.
    static std::mutex mutex;
    static std::map<std::tuple<int, int, Key>, Choice> decided;
    std::lock_guard<std::mutex> lock(mutex);
    const auto global = std::make_tuple(device_, static_cast<int>(precision_), key);
    auto d = decided.find(global);
    if (d == decided.end()) {
      Choice c = choose(key, A, lda, B, ldb);
      if (capturing_) return dispatch(c, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);  // untimed: decide later
      d = decided.emplace(global, c).first;
    }
    it = choices_.emplace(key, d->second).first;
  }
  dispatch(it->second, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void GemmEngine::dispatch(const Choice& c, bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                              int ldb, float beta, float* C, int ldc) {
  std::string why;
  if (c.cublaslt && lt(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, &why)) return;
  own(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

Json GemmEngine::log() const {
  Json j = Json::object();
  CublasLt& lib = CublasLt::instance();
  j.set("cublasLt", lib.loaded() ? "loaded from " + lib.library() : "not loaded: " + lib.reason());
  j.set("precision", precision_name(precision_));
  Json shapes = Json::array();
  for (const auto& kv : choices_) {
    Json s = Json::object();
    s.set("shape", std::to_string(kv.first.M) + "x" + std::to_string(kv.first.N) + "x" + std::to_string(kv.first.K) +
                       (kv.first.ta ? " At" : "") + (kv.first.tb ? " Bt" : ""));
    s.set("ownUs", kv.second.own_us);
    s.set("cublasLtUs", kv.second.lt_us >= 0 ? Json(kv.second.lt_us) : Json());
    s.set("chosen", kv.second.cublaslt ? "cublasLt" : "own");
    // The own kernel's K slices (split-K) for this shape: 1 where its tiles fill the device or the partials
    // would outgrow the workspace's cap.
    const Key& k = kv.first;
    if (precision_ != Precision::Fp32) s.set("ownSlices", split_bytes(k.M, k.N, k.K, sms_) > 0 ? gemm_tc_split_slices(k.M, k.N, k.K, sms_) : 1);
    s.set("why", kv.second.why);
    shapes.push(s);
  }
  j.set("shapes", shapes);
  return j;
}

}  // namespace tb::cuda
