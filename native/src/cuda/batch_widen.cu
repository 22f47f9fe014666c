// A batch widened on the device: compact records (uint8 planes, 16-bit values, integer
// labels) cross PCIe as they are stored and become fp32 inputs and int32 labels here.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/errors.h"
#include "cuda/cuda_check.h"
#include "cuda/kernel_utils.cuh"
#include "cuda/kernels.h"

namespace tb::cuda {
namespace {

template <typename T>
__device__ inline float as_float(T v) {
  return static_cast<float>(v);
}

template <>
__device__ inline float as_float<__half>(__half v) {
  return __half2float(v);
}

template <typename T>
__global__ void widen_k(float* out, const T* in, std::int64_t n, float scale, float offset) {
  TB_GRID_LOOP(i, n) out[i] = as_float(in[i]) * scale + offset;
}

template <typename T>
__global__ void labels_k(std::int32_t* out, const T* in, std::int64_t n) {
  TB_GRID_LOOP(i, n) out[i] = static_cast<std::int32_t>(in[i]);
}

template <typename T>
void launch_widen(float* out, const void* in, std::int64_t n, float scale, float offset, cudaStream_t s) {
  TB_LAUNCH(widen_k<T>, blocks_for(n), kThreads, 0, s)(out, static_cast<const T*>(in), n, scale, offset);
}

template <typename T>
void launch_labels(std::int32_t* out, const void* in, std::int64_t n, cudaStream_t s) {
  TB_LAUNCH(labels_k<T>, blocks_for(n), kThreads, 0, s)(out, static_cast<const T*>(in), n);
}

__global__ void widen_u8_k(float* out, const std::uint8_t* in, std::int64_t n, float scale, float offset) {
  TB_GRID_LOOP(i, n) out[i] = in[i] * scale + offset;
}

}  // namespace

void widen(float* out, const void* in, DType t, std::int64_t n, float scale, float offset, cudaStream_t s) {
  if (n <= 0) return;
  switch (t) {
    case DType::Bool:
    case DType::U8: launch_widen<std::uint8_t>(out, in, n, scale, offset, s); break;
    case DType::I8: launch_widen<std::int8_t>(out, in, n, scale, offset, s); break;
    case DType::U16: launch_widen<std::uint16_t>(out, in, n, scale, offset, s); break;
    case DType::I16: launch_widen<std::int16_t>(out, in, n, scale, offset, s); break;
    case DType::U32: launch_widen<std::uint32_t>(out, in, n, scale, offset, s); break;
    case DType::I32: launch_widen<std::int32_t>(out, in, n, scale, offset, s); break;
    case DType::U64: launch_widen<std::uint64_t>(out, in, n, scale, offset, s); break;
    case DType::I64: launch_widen<std::int64_t>(out, in, n, scale, offset, s); break;
    case DType::F16: launch_widen<__half>(out, in, n, scale, offset, s); break;
    case DType::F32: launch_widen<float>(out, in, n, scale, offset, s); break;
    case DType::F64: launch_widen<double>(out, in, n, scale, offset, s); break;
  }
  TB_CUDA_LAUNCH_CHECK();
}

void widen_labels(std::int32_t* out, const void* in, DType t, std::int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  switch (t) {
    case DType::Bool:
    case DType::U8: launch_labels<std::uint8_t>(out, in, n, s); break;
    case DType::I8: launch_labels<std::int8_t>(out, in, n, s); break;
    case DType::U16: launch_labels<std::uint16_t>(out, in, n, s); break;
    case DType::I16: launch_labels<std::int16_t>(out, in, n, s); break;
    case DType::U32: launch_labels<std::uint32_t>(out, in, n, s); break;
    case DType::I32: launch_labels<std::int32_t>(out, in, n, s); break;
    case DType::U64: launch_labels<std::uint64_t>(out, in, n, s); break;
    case DType::I64: launch_labels<std::int64_t>(out, in, n, s); break;
    default: TB_THROW(ErrorCode::BadInput, std::string("labels must be integers, got ") + dtype_name(t));
  }
  TB_CUDA_LAUNCH_CHECK();
}

void widen_u8(float* out, const std::uint8_t* in, std::int64_t n, float scale, float offset, cudaStream_t s) {
  TB_LAUNCH(widen_u8_k, blocks_for(n), kThreads, 0, s)(out, in, n, scale, offset);
  TB_CUDA_LAUNCH_CHECK();
}

}  // namespace tb::cuda
