// Every GEMM of a training step goes through here. For each shape the
// engine's own kernel and cuBLASLt (when it loads) are timed once per process
// on scratch output, the faster is kept, and the decision is logged in the
// run's result.
#pragma once
#include <cuda_runtime.h>

#include <map>
#include <string>
#include <tuple>

#include "core/json.h"
#include "cuda/allocator.h"

namespace tb::cuda {

enum class Precision { Fp32, Bf16, Fp16 };
// Timed: per shape, the faster of the two; Own / CublasLt: always that one (tests of each path).
enum class GemmPath { Timed, Own, CublasLt };
Precision parse_precision(const std::string& name);
const char* precision_name(Precision p);

class GemmEngine {
 public:
  GemmEngine(int device, Precision precision, cudaStream_t stream);
  ~GemmEngine();
  GemmEngine(const GemmEngine&) = delete;
  GemmEngine& operator=(const GemmEngine&) = delete;

  // Row-major C (M, N) = alpha op(A) op(B) + beta C; fp32 storage, compute in the engine's precision.
  void run(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
           float* C, int ldc);
  // While a CUDA graph is being captured nothing may be timed or allocated: new shapes take the own kernel.
  void set_capturing(bool capturing) { capturing_ = capturing; }
  int sms() const { return sms_; }
  // How often a buffer the GEMMs read or write (16-bit operand copies, split-K partials) moved: a graph
  // captured before a move holds the old address and must be captured again.
  std::uint64_t buffer_moves() const { return buffer_moves_; }
  // Forcing cuBLASLt makes run() throw E_CUDA, with the reason, when it cannot take a GEMM.
  void force_path(GemmPath path) { path_ = path; }
  // {"cublasLt": "...", "shapes": [{shape, ownUs, cublasLtUs, chosen, why}]}
  Json log() const;
  std::int64_t workspace_bytes() const;
  // cuBLASLt's workspace when the library loads (0 otherwise); half copies come on top, sized by the shapes.
  static std::int64_t lt_workspace_bytes();
  // The split-K workspace a 16-bit GEMM of this shape needs from the own kernel (0: it runs unsplit).
  static std::int64_t split_bytes(int M, int N, int K, int sms);

 private:
  struct Key {
    bool ta, tb;
    int M, N, K;
    bool operator<(const Key& o) const { return std::tie(ta, tb, M, N, K) < std::tie(o.ta, o.tb, o.M, o.N, o.K); }
  };
  struct Choice {
    bool cublaslt = false;
    double own_us = 0, lt_us = -1;
    std::string why;
  };
  void own(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
           int ldc);
  bool lt(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
          int ldc, std::string* why);
  Choice choose(const Key& k, const float* A, int lda, const float* B, int ldb);
  void dispatch(const Choice& c, bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                    float beta, float* C, int ldc);
  void* half_copy(int which, const float* src, std::int64_t n);
  int split_slices(int M, int N, int K);

  int sms_ = 0;
  std::uint64_t buffer_moves_ = 0;
  int device_;
  Precision precision_;
  cudaStream_t stream_;
  bool capturing_ = false;
  GemmPath path_ = GemmPath::Timed;
  DeviceBuffer workspace_, half_a_, half_b_, split_;
  std::map<Key, Choice> choices_;
};

}  // namespace tb::cuda
