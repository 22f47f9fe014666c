// Convolutions' data movement on the device, as cpu/ops_conv.cpp's reference path: im2col
// and col2im per chunk of samples, the GEMM's output into (N, O, HW) with bias and ReLU and
// the output gradient back into GEMM order, and the bias gradient over those rows.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/errors.h"
#include "cuda/cuda_check.h"
#include "cuda/kernel_utils.cuh"
#include "cuda/kernels.h"

namespace tb::cuda {
namespace {

// tmp is (O, nb*HW); out is (N, O, HW).
__global__ void conv_out_k(float* out, const float* tmp, const float* bias, int n0, int nb, int O, int HW, bool relu) {
  const std::int64_t total = static_cast<std::int64_t>(nb) * O * HW;
  TB_GRID_LOOP(i, total) {
    const int p = static_cast<int>(i % HW), o = static_cast<int>(i / HW % O), n = static_cast<int>(i / (static_cast<std::int64_t>(HW) * O));
    float v = tmp[(static_cast<std::int64_t>(o) * nb + n) * HW + p] + (bias ? bias[o] : 0.f);
    out[static_cast<std::int64_t>(n0) * O * HW + i] = relu && v < 0.f ? 0.f : v;
  }
}

__global__ void conv_grad_k(float* tmp, const float* dout, int n0, int nb, int O, int HW) {
  const std::int64_t total = static_cast<std::int64_t>(nb) * O * HW;
  TB_GRID_LOOP(i, total) {
    const int p = static_cast<int>(i % HW), o = static_cast<int>(i / HW % O), n = static_cast<int>(i / (static_cast<std::int64_t>(HW) * O));
    tmp[(static_cast<std::int64_t>(o) * nb + n) * HW + p] = dout[static_cast<std::int64_t>(n0) * O * HW + i];
  }
}

__global__ void row_sums_k(float* db, const float* x, int cols) {
  const int r = blockIdx.x;
  double s = 0;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += x[static_cast<std::int64_t>(r) * cols + c];
  s = block_sum(s);
  if (threadIdx.x == 0) db[r] += static_cast<float>(s);
}

// col (C*KH*KW, nb*OH*OW): one thread per element.
__global__ void im2col_k(float* col, const float* in, int n0, int nb, int C, int H, int W, int KH, int KW, int stride, int pad, int OH,
                         int OW) {
  const std::int64_t ohw = static_cast<std::int64_t>(OH) * OW, cols = nb * ohw, total = static_cast<std::int64_t>(C) * KH * KW * cols;
  TB_GRID_LOOP(i, total) {
    const std::int64_t r = i / cols, q = i % cols;
    const int c = static_cast<int>(r / (KH * KW)), kh = static_cast<int>(r / KW % KH), kw = static_cast<int>(r % KW);
    const int n = static_cast<int>(q / ohw), oh = static_cast<int>(q % ohw / OW), ow = static_cast<int>(q % OW);
    const int ih = oh * stride - pad + kh, iw = ow * stride - pad + kw;
    col[i] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? in[((static_cast<std::int64_t>(n0 + n) * C + c) * H + ih) * W + iw] : 0.f;
  }
}

// din: one thread per input element gathers every col entry that read it (no atomics, deterministic).
__global__ void col2im_k(float* din, const float* col, int n0, int nb, int C, int H, int W, int KH, int KW, int stride, int pad, int OH,
                         int OW) {
  const std::int64_t ohw = static_cast<std::int64_t>(OH) * OW, cols = nb * ohw, total = static_cast<std::int64_t>(nb) * C * H * W;
  TB_GRID_LOOP(i, total) {
    const int iw = static_cast<int>(i % W), ih = static_cast<int>(i / W % H), c = static_cast<int>(i / (W * H) % C), n = static_cast<int>(i / (static_cast<std::int64_t>(W) * H * C));
    float s = 0;
    for (int kh = 0; kh < KH; ++kh)
      for (int kw = 0; kw < KW; ++kw) {
        const int oh_s = ih + pad - kh, ow_s = iw + pad - kw;
        if (oh_s < 0 || ow_s < 0 || oh_s % stride || ow_s % stride) continue;
        const int oh = oh_s / stride, ow = ow_s / stride;
        if (oh >= OH || ow >= OW) continue;
        s += col[((static_cast<std::int64_t>(c) * KH + kh) * KW + kw) * cols + n * ohw + static_cast<std::int64_t>(oh) * OW + ow];
      }
    din[(static_cast<std::int64_t>(n0) * C * H * W) + i] = s;
  }
}

}  // namespace

void conv_out_from_gemm(float* out, const float* tmp, const float* bias, int n0, int nb, int O, int HW, bool relu, cudaStream_t s) {
  TB_LAUNCH(conv_out_k, blocks_for(static_cast<std::int64_t>(nb) * O * HW), kThreads, 0, s)(out, tmp, bias, n0, nb, O, HW, relu);
  TB_CUDA_LAUNCH_CHECK();
}

void conv_grad_to_gemm(float* tmp, const float* dout, int n0, int nb, int O, int HW, cudaStream_t s) {
  TB_LAUNCH(conv_grad_k, blocks_for(static_cast<std::int64_t>(nb) * O * HW), kThreads, 0, s)(tmp, dout, n0, nb, O, HW);
  TB_CUDA_LAUNCH_CHECK();
}

void bias_grad_rows(float* db, const float* x, int rows, int cols, cudaStream_t s) {
  if (rows <= 0) return;
  TB_LAUNCH(row_sums_k, rows, kThreads, 0, s)(db, x, cols);
  TB_CUDA_LAUNCH_CHECK();
}

void im2col(float* col, const float* in, int N0, int nb, int C, int H, int W, int KH, int KW, int stride, int pad, cudaStream_t s) {
  const int OH = (H + 2 * pad - KH) / stride + 1, OW = (W + 2 * pad - KW) / stride + 1;
  const std::int64_t total = static_cast<std::int64_t>(C) * KH * KW * nb * OH * OW;
  TB_LAUNCH(im2col_k, blocks_for(total), kThreads, 0, s)(col, in, N0, nb, C, H, W, KH, KW, stride, pad, OH, OW);
  TB_CUDA_LAUNCH_CHECK();
}

void col2im(float* din, const float* col, int N0, int nb, int C, int H, int W, int KH, int KW, int stride, int pad, cudaStream_t s) {
  const int OH = (H + 2 * pad - KH) / stride + 1, OW = (W + 2 * pad - KW) / stride + 1;
  const std::int64_t total = static_cast<std::int64_t>(nb) * C * H * W;
  TB_LAUNCH(col2im_k, blocks_for(total), kThreads, 0, s)(din, col, N0, nb, C, H, W, KH, KW, stride, pad, OH, OW);
  TB_CUDA_LAUNCH_CHECK();
}

}  // namespace tb::cuda
