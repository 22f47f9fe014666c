// CPU reference ops, forward and backward, templated on the
// scalar (float for training, double for finite-difference checks).
// Argument order follows llm.c: outputs, inputs, then sizes. Backward
// functions ACCUMULATE (+=) into parameter gradients and OVERWRITE input
// gradients, so gradient accumulation over micro-batches is a loop.
#pragma once
#include <cstdint>
#include <vector>

namespace tb {

class ThreadPool;
class Rng;

// ---- linear: out (B, O) = in (B, I) . W^T + b;  W is (O, I), b is (O) or null
template <typename T>
void linear_forward(T* out, const T* in, const T* W, const T* b, int B, int I, int O, ThreadPool* pool);
template <typename T>
void linear_backward(T* din, T* dW, T* db, const T* dout, const T* in, const T* W, int B, int I, int O,
                     ThreadPool* pool);

// ---- conv2d on channels-last activations: in (N, H, W, C), i.e. one row of C values per pixel,
// weight (O, C, KH, KW) as PyTorch stores it, bias (O) or null, out (N, OH, OW, O). Batch norm on
// such a tensor is batchnorm_*(N = N*H*W, C, HW = 1).
struct ConvGeom {
  int N, C, H, W, O, KH, KW, stride, pad;
  int OH() const { return (H + 2 * pad - KH) / stride + 1; }
  int OW() const { return (W + 2 * pad - KW) / stride + 1; }
};
// Fewer input pixels than kernel taps (the heads' 3x3 on a 2x2 board): the convolution runs as a dense
// layer over all pixels (cpu/ops_conv.cpp), whose workspace is conv_dense_floats values.
inline bool conv_is_dense(const ConvGeom& g) { return g.H * g.W < g.KH * g.KW; }
std::int64_t conv_dense_floats(const ConvGeom& g);
// The float workspace a convolution uses at g.N samples (packed weights, a row of zeros for padding
// taps, the weight gradient's partial sums); the memory model uses it too.
std::int64_t conv_workspace_floats(const ConvGeom& g);
// Values the weight-gradient kernel may read past the last row of a convolution's input and of its
// output gradient (it loads whole vectors at a row's edge, never using what lies past it): the
// engine allocates activations and their gradients with this much slack.
constexpr std::int64_t kConvRowSlack = 32;
template <typename T>
struct ConvWorkspace {
  std::vector<T> col;
  // For a dense convolution, the forward pass left its dense weights in `col`.
  bool col_holds_batch = false;
};
template <typename T>
void conv2d_forward(T* out, const T* in, const T* weight, const T* bias, const ConvGeom& g, ConvWorkspace<T>& ws,
                    ThreadPool* pool);
// din may be null (first layer); dbias may be null (no bias). reuse_col: the last forward ran
// with these weights, so a dense convolution's dense weights may be reused.
// add_din: din += the input gradient (another consumer already wrote din) instead of din =.
template <typename T>
void conv2d_backward(T* din, T* dweight, T* dbias, const T* dout, const T* in, const T* weight, const ConvGeom& g,
                     ConvWorkspace<T>& ws, ThreadPool* pool, bool reuse_col = false, bool add_din = false);

// ---- batch norm over (N, HW) per channel: x (N, C, HW); HW = 1 for (N, C) features
template <typename T>
void batchnorm_forward_train(T* out, T* save_mean, T* save_invstd, const T* in, const T* gamma, const T* beta,
                             T* running_mean, T* running_var, int N, int C, int HW, T momentum, T eps,
                             ThreadPool* pool);
template <typename T>
void batchnorm_forward_eval(T* out, const T* in, const T* gamma, const T* beta, const T* running_mean,
                            const T* running_var, int N, int C, int HW, T eps, ThreadPool* pool);
// relu_out: the output of a ReLU that follows this batch norm, whose backward is then folded in
// (dout is the ReLU's output gradient, passed where relu_out > 0); null when there is none.
template <typename T>
void batchnorm_backward(T* din, T* dgamma, T* dbeta, const T* dout, const T* in, const T* gamma, const T* save_mean,
                        const T* save_invstd, int N, int C, int HW, ThreadPool* pool, const T* relu_out = nullptr);

// ---- elementwise and pooling
template <typename T>
void relu_forward(T* out, const T* in, std::int64_t n);
// din = dout where out > 0 (out is the forward output; in-place safe)
template <typename T>
void relu_backward(T* din, const T* dout, const T* out, std::int64_t n);
template <typename T>
void add_forward(T* out, const T* a, const T* b, std::int64_t n);
// The same split over the pool's threads (the training path); add_into: acc += x.
void relu_forward(float* out, const float* in, std::int64_t n, ThreadPool* pool);
void relu_backward(float* din, const float* dout, const float* out, std::int64_t n, ThreadPool* pool);
void add_forward(float* out, const float* a, const float* b, std::int64_t n, ThreadPool* pool);
void add_into(float* acc, const float* x, std::int64_t n, ThreadPool* pool);
void copy_values(float* out, const float* in, std::int64_t n, ThreadPool* pool);
// out (N, C) = mean over HW of in (N, C, HW)
template <typename T>
void global_avgpool_forward(T* out, const T* in, int N, int C, int HW);
template <typename T>
void global_avgpool_backward(T* din, const T* dout, int N, int C, int HW);
// The same from a channels-last in (N, HW, C) to out (N, C).
void global_avgpool_nhwc_forward(float* out, const float* in, int N, int C, int HW);
void global_avgpool_nhwc_backward(float* din, const float* dout, int N, int C, int HW);
// Channels-first (N, C, HW) <-> channels-last (N, HW, C): the data's and PyTorch's flatten order against the
// engine's convolution layout (input and flatten nodes).
void to_channels_last(float* out, const float* in, int N, int C, int HW, ThreadPool* pool = nullptr);
void to_channels_first(float* out, const float* in, int N, int C, int HW);
// Inverted dropout: mask holds 0 or 1/(1-p); p = 0 copies.
template <typename T>
void dropout_forward(T* out, T* mask, const T* in, std::int64_t n, double p, Rng* rng);
template <typename T>
void dropout_backward(T* din, const T* dout, const T* mask, std::int64_t n);

// ---- losses: return the mean loss; write d(loss * grad_scale)/dlogits.
// Hard labels: logits (B, K), labels (B) in [0, K). correct counts argmax hits (may be null).
template <typename T>
double softmax_ce_forward_backward(T* dlogits, const T* logits, const std::int32_t* labels, int B, int K,
                                   double grad_scale, std::int64_t* correct);
// Soft targets (B, K) (any non-negative weights); mask (B) of 0/1 or null. Mean over unmasked rows.
template <typename T>
double softmax_ce_soft_forward_backward(T* dlogits, const T* logits, const T* targets, const T* mask, int B, int K,
                                        double grad_scale);
// Binary cross-entropy on logits (B) against targets in [0, 1].
template <typename T>
double bce_logits_forward_backward(T* dlogits, const T* logits, const T* targets, int B, double grad_scale);
// Mean squared error over B * D values.
template <typename T>
double mse_forward_backward(T* dpred, const T* pred, const T* target, std::int64_t n, double grad_scale);

}  // namespace tb
