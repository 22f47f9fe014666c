// Force-included (g++ -include) before every native/src/cuda source of the emulated
// build (TB_CUDA_EMULATE=ON): NVIDIA's own headers first (the real types and the real
// fp16/bf16 rounding), then the CUDA language on top of emu_kernel.h: the execution
// space keywords, the built-in index variables, __shared__, barriers, warp shuffles,
// atomics, nvcuda::wmma as the engine uses it, and TB_LAUNCH in place of <<<...>>>.
// The sources are the same as the nvcc build's; only TB_LAUNCH and TB_HAS_WMMA differ.
#pragma once

// NVIDIA's headers use gridDim & co. as parameter names: all of them before the macros below.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "emu_kernel.h"
#include "emu_runtime.h"

#define TB_CUDA_EMULATED 1

#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#undef __launch_bounds__
#undef __forceinline__
#undef __noinline__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
// One block runs at a time in the whole process (the runtime runs device work under one lock),
// and all its fibers share the one copy: per-block shared memory, as on the device. Plain static,
// not thread_local: its one-time initialisation (GCC guards arrays of __nv_bfloat16) is then the
// thread-safe kind ThreadSanitizer understands, and a kernel reads it without a TLS lookup.
#define __shared__ static

#undef threadIdx
#undef blockIdx
#undef blockDim
#undef gridDim
#undef warpSize
#define threadIdx (::tb::emu::thread_index())
#define blockIdx (::tb::emu::block_index())
#define blockDim (::tb::emu::block_dim())
#define gridDim (::tb::emu::grid_dim())
#define warpSize 32

#define __syncthreads() ::tb::emu::sync_threads(__FILE__, __LINE__)
#define __syncwarp(...) ::tb::emu::syncwarp(__FILE__, __LINE__, ##__VA_ARGS__)
#define __shfl_sync(mask, v, src, ...) ::tb::emu::shfl(::tb::emu::WarpOp::ShflIdx, mask, v, src, __FILE__, __LINE__, ##__VA_ARGS__)
#define __shfl_up_sync(mask, v, d, ...) ::tb::emu::shfl(::tb::emu::WarpOp::ShflUp, mask, v, d, __FILE__, __LINE__, ##__VA_ARGS__)
#define __shfl_down_sync(mask, v, d, ...) ::tb::emu::shfl(::tb::emu::WarpOp::ShflDown, mask, v, d, __FILE__, __LINE__, ##__VA_ARGS__)
#define __shfl_xor_sync(mask, v, d, ...) ::tb::emu::shfl(::tb::emu::WarpOp::ShflXor, mask, v, d, __FILE__, __LINE__, ##__VA_ARGS__)

// A kernel launch: the same arguments as <<<grid, block, shared bytes, stream>>>.
#define TB_DEVICE_MEMORY_LENT(ptr, bytes, block, stream, fresh) ::tb::emu::memory_lent(ptr, bytes, block, stream, fresh)
#define TB_DEVICE_MEMORY_RETURNED(ptr, block, stream) ::tb::emu::memory_returned(ptr, block, stream)
#define TB_LAUNCH(kernel, grid, block, smem, stream) ::tb::emu::Launcher(kernel, grid, block, smem, stream, #kernel, __FILE__, __LINE__)

namespace tb::emu {

template <typename T>
T shfl(WarpOp op, unsigned mask, T value, int arg, const char* file, int line, int width = 32) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "shuffles move values of at most 8 bytes");
  T out{};
  warp_collective(op, mask, &value, &out, sizeof(T), arg, width, file, line);
  return out;
}

inline void syncwarp(const char* file, int line, unsigned mask = 0xffffffffu) { warp_collective(WarpOp::Sync, mask, nullptr, nullptr, 0, 0, 32, file, line); }

/** Where a kernel argument that is a pointer points, when that is not device memory. */
template <typename A>
void check_argument(std::string& bad, const char* kernel, int index, const A& a) {
  if constexpr (std::is_pointer_v<A>) {
    if (a && !is_device_pointer(a) && bad.empty())
      bad = std::string("kernel ") + kernel + " was given a host pointer as argument " + std::to_string(index) +
            " (a kernel reads only device memory; on a GPU this is an illegal address)";
  }
}

/** What TB_LAUNCH makes: called with the kernel's arguments, converted to its parameter types as a launch does. */
template <typename... P>
class Launcher {
 public:
  Launcher(void (*kernel)(P...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream, const char* name, const char* file, int line)
      : kernel_(kernel), grid_(grid), block_(block), smem_(smem), stream_(stream), name_(name), file_(file), line_(line) {}

  template <typename... A>
  void operator()(A&&... args) {
    static_assert(sizeof...(A) == sizeof...(P), "a kernel launch passes one argument per parameter");
    // The arguments by value, as the driver copies a launch's parameters.
    std::tuple<std::decay_t<P>...> values(std::forward<A>(args)...);
    std::string bad;
    std::apply([&](const auto&... v) {
      int index = 0;
      (check_argument(bad, name_, index++, v), ...);
    }, values);
    auto body = [kernel = kernel_, values]() { std::apply(kernel, values); };
    launch(stream_, Kernel{name_, file_, line_, grid_, block_, smem_, std::move(body)}, bad);
  }

 private:
  void (*kernel_)(P...);
  dim3 grid_, block_;
  std::size_t smem_;
  cudaStream_t stream_;
  const char* name_;
  const char* file_;
  int line_;
};

// ---- atomics: fibers of one block never run at once, but TSan must see them as atomic.
template <typename T>
inline T atomic_add_int(T* p, T v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
template <typename F, typename U>
inline F atomic_add_float(F* p, F v) {
  U old = __atomic_load_n(reinterpret_cast<U*>(p), __ATOMIC_RELAXED), next;
  F f;
  do {
    std::memcpy(&f, &old, sizeof f);
    const F sum = f + v;
    std::memcpy(&next, &sum, sizeof next);
  } while (!__atomic_compare_exchange_n(reinterpret_cast<U*>(p), &old, next, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return f;
}

}  // namespace tb::emu

inline int atomicAdd(int* p, int v) { return ::tb::emu::atomic_add_int(p, v); }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return ::tb::emu::atomic_add_int(p, v); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { return ::tb::emu::atomic_add_int(p, v); }
inline float atomicAdd(float* p, float v) { return ::tb::emu::atomic_add_float<float, std::uint32_t>(p, v); }
inline double atomicAdd(double* p, double v) { return ::tb::emu::atomic_add_float<double, std::uint64_t>(p, v); }

// The device's math functions are global names; the host's classification functions are in std.
using std::isfinite;
using std::isinf;
using std::isnan;

// Device math the host library lacks (the device's own is within 2 ulp; see what emulation cannot tell, in the ADR).
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }

#include "emu_wmma.h"
