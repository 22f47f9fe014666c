// Mean seconds per launch of `launch` on stream s: one warm-up, then `reps`
// launches between two events (used by the GEMM engine's per-shape choice and
// by the GEMM benchmark).
#pragma once
#include <cuda_runtime.h>

#include "cuda/cuda_check.h"

namespace tb::cuda {

template <typename Launch>
double time_launches(cudaStream_t s, int reps, Launch&& launch) {
  cudaEvent_t t0, t1;
  TB_CUDA_CHECK(cudaEventCreate(&t0));
  TB_CUDA_CHECK(cudaEventCreate(&t1));
  float ms = 0;
  try {
    launch();  // warm-up: plans, caches, clocks
    TB_CUDA_CHECK(cudaEventRecord(t0, s));
    for (int r = 0; r < reps; ++r) launch();
    TB_CUDA_CHECK(cudaEventRecord(t1, s));
    TB_CUDA_CHECK(cudaEventSynchronize(t1));
    TB_CUDA_CHECK(cudaEventElapsedTime(&ms, t0, t1));
  } catch (...) {
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    throw;
  }
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  return ms / 1000.0 / reps;
}

}  // namespace tb::cuda
