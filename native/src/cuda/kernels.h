// CUDA kernels of the engine's ops, launched on a stream with device pointers.
// Each has a CPU twin in native/src/cpu that it is checked against
// (cuda_parity.cu; `npm run test:gpu`). Shapes follow the CPU ops exactly.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace tb::cuda {

void relu_forward(float* out, const float* in, std::int64_t n, cudaStream_t s);
void relu_backward(float* din, const float* dout, const float* out, std::int64_t n, cudaStream_t s);
void add_forward(float* out, const float* a, const float* b, std::int64_t n, cudaStream_t s);
// x (rows, cols) += bias (cols) per row
void bias_add_rows(float* x, const float* bias, int rows, int cols, cudaStream_t s);
// Widening on the device: compact batches (uint8 planes, fp16 targets) travel over PCIe.
void widen_u8(float* out, const std::uint8_t* in, std::int64_t n, float scale, float offset, cudaStream_t s);
void widen_f16(float* out, const __half* in, std::int64_t n, float scale, float offset, cudaStream_t s);
void to_bf16(__nv_bfloat16* out, const float* in, std::int64_t n, cudaStream_t s);

// Row-major C (M, N) = alpha * op(A) * op(B) + beta * C, fp32 (shared-memory tiles).
void gemm_f32(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
              int ldb, float beta, float* C, int ldc, cudaStream_t s);
// Tensor cores (WMMA, sm_80+): C (M, N) fp32 = A (M, K) bf16 . B (K, N) bf16, row-major;
// M, N, K multiples of 16.
void gemm_bf16_tc(int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* B, float* C, cudaStream_t s);

// Softmax cross-entropy with hard labels: per-row loss, and dlogits scaled by grad_scale / B.
void softmax_ce(float* row_loss, float* dlogits, const float* logits, const std::int32_t* labels, int B, int K,
                float grad_scale, cudaStream_t s);
// Batch norm (train) over (N, HW) per channel: saves mean and 1/std, updates running stats.
void batchnorm_forward_train(float* out, float* save_mean, float* save_invstd, const float* in, const float* gamma,
                             const float* beta, float* running_mean, float* running_var, int N, int C, int HW,
                             float momentum, float eps, cudaStream_t s);

void batchnorm_backward(float* din, float* dgamma, float* dbeta, const float* dout, const float* in, const float* gamma,
                        const float* save_mean, const float* save_invstd, int N, int C, int HW, cudaStream_t s);
// out (N, C) = mean over HW of in (N, C, HW), and its backward.
void global_avgpool_forward(float* out, const float* in, int N, int C, int HW, cudaStream_t s);
void global_avgpool_backward(float* din, const float* dout, int N, int C, int HW, cudaStream_t s);
// db (cols) += column sums of dout (rows, cols): the bias gradient of linear layers.
void bias_grad(float* db, const float* dout, int rows, int cols, cudaStream_t s);
// Soft-target cross-entropy (optional 0/1 mask per row) and BCE on logits: per-row loss and scaled gradients.
void softmax_ce_soft(float* row_loss, float* dlogits, const float* logits, const float* targets, const float* mask, int B, int K,
                     float grad_scale, float rows_counted, cudaStream_t s);
void bce_logits(float* row_loss, float* dlogits, const float* logits, const float* targets, int B, float grad_scale, cudaStream_t s);
// im2col / col2im for one chunk of nb samples starting at n0 (layout as cpu/ops_conv.cpp).
void im2col(float* col, const float* in, int N0, int nb, int C, int H, int W, int KH, int KW, int stride, int pad, cudaStream_t s);
void col2im(float* din, const float* col, int N0, int nb, int C, int H, int W, int KH, int KW, int stride, int pad, cudaStream_t s);

// Fused optimizer updates over the flat parameter block (one kernel each).
void sgd_update(float* p, const float* g, float* buf, std::int64_t n, float lr, float momentum, float weight_decay,
                cudaStream_t s);
void adamw_update(float* p, const float* g, float* m, float* v, std::int64_t n, float lr, float beta1, float beta2,
                  float eps, float weight_decay, float bias_correction1, float bias_correction2, cudaStream_t s);
// Counts inf/nan in x into *count (device int): dynamic loss scaling skips a step when it is not zero.
void count_nonfinite(unsigned int* count, const float* x, std::int64_t n, cudaStream_t s);

}  // namespace tb::cuda
