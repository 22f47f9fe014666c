// cuBLASLt, loaded at run time (dlopen / LoadLibrary): no cuBLAS headers exist
// on the build machines, so the few entry points used are declared here with
// the ABI of cublasLt.h (CUDA 11.4 and later). Absent library: loaded() is
// false, reason() says why, and every GEMM uses the engine's own kernels.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace tb::cuda {

class CublasLt {
 public:
  static CublasLt& instance();
  bool loaded() const { return handle_ != nullptr; }
  const std::string& library() const { return library_; }
  const std::string& reason() const { return reason_; }

  // Row-major C (M, N) = alpha op(A) op(B) + beta C with fp32 C; A and B are fp32, or bf16 / fp16
  // (`input_type`: 0 fp32, 1 bf16, 2 fp16) already converted by the caller. Returns false with
  // `why` when cuBLASLt has no algorithm for this case (the caller then uses its own kernel).
  bool matmul(int input_type, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const void* A, int lda, const void* B,
              int ldb, float beta, float* C, int ldc, void* workspace, std::size_t workspace_bytes, cudaStream_t s,
              std::string* why);

 private:
  struct PlanKey {
    int input_type;
    bool trans_a, trans_b;
    int M, N, K, lda, ldb, ldc;
    std::uint32_t align_a, align_b, align_c;
    std::size_t workspace_bytes;
    bool operator<(const PlanKey& o) const {
      return std::tie(input_type, trans_a, trans_b, M, N, K, lda, ldb, ldc, align_a, align_b, align_c, workspace_bytes) <
             std::tie(o.input_type, o.trans_a, o.trans_b, o.M, o.N, o.K, o.lda, o.ldb, o.ldc, o.align_a, o.align_b, o.align_c,
                      o.workspace_bytes);
    }
  };
  struct Plan {
    bool ok = false;
    std::string why;
    void *desc = nullptr, *first = nullptr, *second = nullptr, *out = nullptr;
    std::uint64_t algo[8] = {};
  };
  CublasLt();
  const Plan* plan(const PlanKey& key, std::string* why);
  std::mutex mutex_;  // two trainers may run at once
  std::map<PlanKey, Plan> plans_;
  void* lib_ = nullptr;
  void* handle_ = nullptr;
  std::string library_, reason_;
};

// Whether cuBLASLt can be loaded here, without touching a GPU: { loaded, library, reason }.
struct CublasLtProbe {
  bool loaded = false;
  std::string library, reason;
};
CublasLtProbe probe_cublaslt();

}  // namespace tb::cuda
