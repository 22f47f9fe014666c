// CUDA kernels of the engine's ops, launched on a stream with device pointers.
// Each has a CPU twin in native/src/cpu that it is checked against
// (cuda_parity.cu; `npm run test:gpu`). Shapes follow the CPU ops exactly.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/train_state.h"
#include "data/dtype.h"

namespace tb::cuda {

// ---- gemm.cu and gemm_tc.cu: the GEMMs (cuda/gemm_engine.h picks between them and cuBLASLt)
// Row-major C (M, N) = alpha * op(A) * op(B) + beta * C, fp32 (shared-memory tiles).
void gemm_f32(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
              int ldb, float beta, float* C, int ldc, cudaStream_t s);
// Tensor cores (WMMA, sm_80+): C (M, N) fp32 = A (M, K) bf16 . B (K, N) bf16, row-major;
// M, N, K multiples of 16.
void gemm_bf16_tc(int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* B, float* C, cudaStream_t s);
// Mixed precision with the gemm_f32 interface (gemm_tc.cu): operands rounded to fp16 (half_not_bf16) or bf16
// while staged, fp32 accumulation; any shape and transpose. With slices > 1, K is split into that many
// slices whose fp32 partials go to `workspace` (slices x M x N floats) and are summed in order.
void gemm_tc(bool half_not_bf16, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
             const float* B, int ldb, float beta, float* C, int ldc, cudaStream_t s, int slices = 1, float* workspace = nullptr);
// How many K slices gemm_tc should use on a device of `sms` SMs: 1 where the tiles already fill it or K is short.
int gemm_tc_split_slices(int M, int N, int K, int sms);

// ---- ops_elementwise.cu
void relu_forward(float* out, const float* in, std::int64_t n, cudaStream_t s);
void relu_backward(float* din, const float* dout, const float* out, std::int64_t n, cudaStream_t s);
// out = a + b, then ReLU when `relu` (a residual add with its ReLU fused in).
void add_forward(float* out, const float* a, const float* b, std::int64_t n, cudaStream_t s, bool relu = false);
void multiply(float* out, const float* a, const float* b, std::int64_t n, cudaStream_t s);
void accumulate(float* a, const float* b, std::int64_t n, cudaStream_t s);
// Inverted dropout with a counter-based hash of (seed, index): no RNG state, replayable inside a graph.
// salt: distinguishes the layers that share a step's seed; micro_batch: the accumulated micro-batches.
void dropout_forward(float* out, float* mask, const float* in, std::int64_t n, float p, unsigned long long salt, int micro_batch,
                     const TrainState* st, cudaStream_t s);
// out (N, C) = mean over HW of in (N, C, HW), and its backward.
void global_avgpool_forward(float* out, const float* in, int N, int C, int HW, cudaStream_t s);
void global_avgpool_backward(float* din, const float* dout, int N, int C, int HW, cudaStream_t s);
void to_bf16(__nv_bfloat16* out, const float* in, std::int64_t n, cudaStream_t s);
void to_f16(__half* out, const float* in, std::int64_t n, cudaStream_t s);
// Counts inf/nan in x into *count (device int): dynamic loss scaling skips a step when it is not zero.
void count_nonfinite(unsigned int* count, const float* x, std::int64_t n, cudaStream_t s);

// ---- ops_linear.cu
// x (N, channels, inner) += bias[channel] (bias may be null), then ReLU when `relu`: the epilogue fused
// into linear and batch-norm outputs that feed a ReLU.
void bias_act(float* x, const float* bias, std::int64_t n, int channels, int inner, bool relu, cudaStream_t s);
// db (cols) += column sums of dout (rows, cols): the bias gradient of linear layers.
void bias_grad(float* db, const float* dout, int rows, int cols, cudaStream_t s);

// ---- ops_conv.cu
// im2col / col2im for one chunk of nb samples starting at n0 (layout as cpu/ops_conv.cpp).
void im2col(float* col, const float* in, int N0, int nb, int C, int H, int W, int KH, int KW, int stride, int pad, cudaStream_t s);
void col2im(float* din, const float* col, int N0, int nb, int C, int H, int W, int KH, int KW, int stride, int pad, cudaStream_t s);
// Conv GEMM output tmp (O, nb*HW) into out (N, O, HW) at sample n0, with bias and optional ReLU; and the reverse for dout.
void conv_out_from_gemm(float* out, const float* tmp, const float* bias, int n0, int nb, int O, int HW, bool relu, cudaStream_t s);
void conv_grad_to_gemm(float* tmp, const float* dout, int n0, int nb, int O, int HW, cudaStream_t s);
// db (rows) += row sums of x (rows, cols): the bias gradient of a convolution in GEMM layout (O, N*HW).
void bias_grad_rows(float* db, const float* x, int rows, int cols, cudaStream_t s);

// ---- ops_batchnorm.cu
// Batch norm (train) over (N, HW) per channel: saves mean and 1/std, updates running stats. With `residual`, the
// residual Add's sum is written instead (bn(in) + residual, then the ReLU when `relu`).
void batchnorm_forward_train(float* out, float* save_mean, float* save_invstd, const float* in, const float* gamma,
                             const float* beta, float* running_mean, float* running_var, int N, int C, int HW,
                             float momentum, float eps, cudaStream_t s, bool relu = false, const float* residual = nullptr);
void batchnorm_forward_eval(float* out, const float* in, const float* gamma, const float* beta, const float* running_mean,
                            const float* running_var, int N, int C, int HW, float eps, bool relu, cudaStream_t s,
                            const float* residual = nullptr);
void batchnorm_backward(float* din, float* dgamma, float* dbeta, const float* dout, const float* in, const float* gamma,
                        const float* save_mean, const float* save_invstd, int N, int C, int HW, cudaStream_t s);

// ---- ops_loss.cu
// Softmax cross-entropy with hard labels: per-row loss, and dlogits scaled by grad_scale / B.
void softmax_ce(float* row_loss, float* dlogits, const float* logits, const std::int32_t* labels, int B, int K,
                float grad_scale, cudaStream_t s);
// Soft-target cross-entropy (optional 0/1 mask per row) and BCE on logits: per-row loss and scaled gradients.
// rows_counted: device pointer to the number of unmasked rows (mask_count), or null for B.
void softmax_ce_soft(float* row_loss, float* dlogits, const float* logits, const float* targets, const float* mask, int B, int K,
                     float grad_scale, const float* rows_counted, cudaStream_t s);
void bce_logits(float* row_loss, float* dlogits, const float* logits, const float* targets, int B, float grad_scale, cudaStream_t s);
// Mean squared error: per-row loss (sum over D of squared error / D) and gradient 2 (p - t) * scale / (B * D).
void mse(float* row_loss, float* dpred, const float* pred, const float* target, int B, int D, float grad_scale, cudaStream_t s);
// *counted = the sum of the mask (row weights), the CPU's divisor for masked soft-target losses.
void mask_count(float* counted, const float* mask, int B, cudaStream_t s);
// x *= st->scale.scale: the fp16 loss scale applied to the output gradients.
void apply_loss_scale(float* x, std::int64_t n, const TrainState* st, cudaStream_t s);
// Head `head`'s mean loss (sum of row_loss / rows counted) into the state's sums, weighted into loss_sum.
void accumulate_loss(TrainState* st, int head, const float* row_loss, int B, const float* rows_counted, float weight,
                     bool count_micro_batch, cudaStream_t s);
// Rows whose argmax matches the label, or the target's argmax (mask 0 rows skipped).
void count_correct(TrainState* st, const float* logits, const std::int32_t* labels, const float* targets, const float* mask, int B,
                   int K, cudaStream_t s);

// ---- step_state.cu: the update and the step state
// Fused optimizer updates over the flat parameter block (one kernel each). They read the learning rate,
// the gradient factor (unscale x clip), the bias corrections and whether to apply the step from `st`.
void sgd_update(float* p, const float* g, float* buf, std::int64_t n, float momentum, float weight_decay, const TrainState* st,
                cudaStream_t s);
void adamw_update(float* p, const float* g, float* m, float* v, std::int64_t n, float beta1, float beta2, float eps,
                  float weight_decay, const TrainState* st, cudaStream_t s);
// One step's gradient bookkeeping: inf/nan count and sum of squares over g, then (one thread) the norm,
// the clipping factor, the loss-scale update and whether to apply the step, and the AdamW bias corrections.
void gradient_stats(TrainState* st, const float* g, std::int64_t n, cudaStream_t s);
void finish_gradients(TrainState* st, float clip_norm, bool dynamic_scale, float beta1, float beta2, cudaStream_t s);
// Host values for the next step, written by a one-thread kernel so graph replays see them.
void set_step(TrainState* st, float lr, unsigned long long dropout_seed, cudaStream_t s);
// Zeroes the sums readout() has taken (reset_readout_sums), queued on the step's stream.
void reset_readout(TrainState* st, cudaStream_t s);
// Forces g[0] to +inf: the test hook that proves a non-finite step is skipped.
void poison_gradient(float* g, cudaStream_t s);

// ---- batch_widen.cu: batches widened on the device
// Widening on the device: compact batches (uint8 planes, fp16 targets) travel over PCIe.
void widen_u8(float* out, const std::uint8_t* in, std::int64_t n, float scale, float offset, cudaStream_t s);
// Any dataset dtype to float (x * scale + offset), and integer labels to int32, on the device.
void widen(float* out, const void* in, DType t, std::int64_t n, float scale, float offset, cudaStream_t s);
void widen_labels(std::int32_t* out, const void* in, DType t, std::int64_t n, cudaStream_t s);

}  // namespace tb::cuda
