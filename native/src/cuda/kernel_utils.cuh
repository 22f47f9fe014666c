// Launch geometry and block reductions shared by the kernel files.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace tb::cuda {

constexpr int kThreads = 256;

inline unsigned blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 * 32 ? b : 65535 * 32);
}

// Grid-stride loops: any n, any grid size.
#define TB_GRID_LOOP(i, n) \
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < (n); i += static_cast<std::int64_t>(blockDim.x) * gridDim.x)

// Block-wide sum in double (so long reductions keep the CPU reference's precision); valid in thread 0.
// Blocks must have kThreads threads.
__device__ inline double block_sum(double v) {
  __shared__ double partial[kThreads / 32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  double total = 0;
  if (threadIdx.x == 0)
    for (int w = 0; w < kThreads / 32; ++w) total += partial[w];
  __syncthreads();
  return total;
}

// Block-wide max; valid in every thread.
__device__ inline double block_max(double v) {
  __shared__ double partial[kThreads / 32];
  __shared__ double result;
  for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_down_sync(0xffffffff, v, o));
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    double m = partial[0];
    for (int w = 1; w < kThreads / 32; ++w) m = fmax(m, partial[w]);
    result = m;
  }
  __syncthreads();
  return result;
}

}  // namespace tb::cuda
