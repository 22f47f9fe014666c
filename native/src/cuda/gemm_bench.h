// GEMM throughput on the GPU: the engine's own kernel against cuBLASLt at one
// shape and precision, for `npm run bench:gpu`. Also what the device could do
// in theory, from its SM count, clock and tensor-core rate.
#pragma once
#include <string>

#include "core/json.h"

namespace tb {

Json bench_gemm_cuda(int M, int N, int K, const std::string& precision, int reps);
// { loaded, library, reason }: whether cuBLASLt can be opened here (no GPU needed).
Json cublaslt_status();

}  // namespace tb
