// The linear layer's own kernels on the device (its GEMMs run in the GEMM engine), as
// cpu/ops_linear.cpp: the bias with an optional fused ReLU, and the bias gradient.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/errors.h"
#include "cuda/cuda_check.h"
#include "cuda/kernel_utils.cuh"
#include "cuda/kernels.h"

namespace tb::cuda {
namespace {

__global__ void bias_act_k(float* x, const float* bias, std::int64_t n, int channels, int inner, bool relu) {
  TB_GRID_LOOP(i, n) {
    float v = x[i] + (bias ? bias[i / inner % channels] : 0.f);
    x[i] = relu && v < 0.f ? 0.f : v;
  }
}

// One thread per column: summing down the rows in order matches the CPU's order.
__global__ void bias_grad_k(float* db, const float* dout, int rows, int cols) {
  TB_GRID_LOOP(c, cols) {
    float s = 0;
    for (int r = 0; r < rows; ++r) s += dout[static_cast<std::int64_t>(r) * cols + c];
    db[c] += s;
  }
}

}  // namespace

void bias_act(float* x, const float* bias, std::int64_t n, int channels, int inner, bool relu, cudaStream_t s) {
  if (n <= 0 || (!bias && !relu)) return;
  TB_LAUNCH(bias_act_k, blocks_for(n), kThreads, 0, s)(x, bias, n, channels, inner, relu);
  TB_CUDA_LAUNCH_CHECK();
}

void bias_grad(float* db, const float* dout, int rows, int cols, cudaStream_t s) {
  TB_LAUNCH(bias_grad_k, blocks_for(cols), kThreads, 0, s)(db, dout, rows, cols);
  TB_CUDA_LAUNCH_CHECK();
}

}  // namespace tb::cuda
