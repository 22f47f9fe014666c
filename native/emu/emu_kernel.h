// The emulated device's kernel side: one fiber per CUDA thread, blocks run one
// after another on the launching host thread, and every point where CUDA
// threads meet (__syncthreads, warp shuffles, WMMA) is a scheduling point
// that carries its file:line. The scheduler checks what a GPU would punish
// (docs/adr/0023-emulated-cuda.md): a barrier some live threads never reach,
// threads at different barrier sites, a barrier after some threads exited, a
// warp collective not reached by every lane of its mask, bad launch geometry.
// Plain C++: the runtime (emu_device.cpp, emu_memory.cpp, emu_streams.cpp) and the kernels (via cuda_emu.h) use it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#include <vector_types.h>

namespace tb::emu {

/** The order threads (and blocks) are resumed in: two orders catch barriers missing in one. */
enum class Order { Forward, Reverse, Random };

struct KernelConfig {
  Order order = Order::Forward;
  std::uint64_t seed = 1;
};
/** From TB_EMU_ORDER (forward, reverse, random:SEED); read once. */
const KernelConfig& kernel_config();

/**
 * Index and size built-ins of the running CUDA thread (valid only inside a kernel): the scheduler
 * sets them before it resumes a fiber, so a kernel reads them as plain thread-local values the
 * compiler can keep out of its loops.
 */
namespace detail {
struct Builtins {
  uint3 tid, bid;
  dim3 bdim, gdim;
};
extern thread_local Builtins t_builtins;
}  // namespace detail
inline uint3 thread_index() { return detail::t_builtins.tid; }
inline uint3 block_index() { return detail::t_builtins.bid; }
inline dim3 block_dim() { return detail::t_builtins.bdim; }
inline dim3 grid_dim() { return detail::t_builtins.gdim; }

/** A block barrier: returns once every thread of the block reached this same site. */
void sync_threads(const char* file, int line);

enum class WarpOp { ShflIdx, ShflUp, ShflDown, ShflXor, Sync };

/**
 * One lane's part of a warp collective: `value` (at most 8 bytes) is exchanged among the
 * lanes in `mask`; returns once all of them reached this same site, with `out` set to the
 * value the op gives this lane.
 */
void warp_collective(WarpOp op, unsigned mask, const void* value, void* out, std::size_t size, int arg, int width, const char* file,
                     int line);

/** What a kernel launch runs: its body once per CUDA thread, in the running thread's context. */
struct Kernel {
  const char* name;
  const char* file;
  int line;
  dim3 grid, block;
  std::size_t shared_bytes;
  std::function<void()> body;
};

/**
 * Runs a whole kernel on the calling host thread: every block, every thread as a fiber.
 * Returns an empty string, or what went wrong with the sites of the threads involved.
 */
std::string run_kernel(const Kernel& k);

/** Launch geometry CUDA refuses (cudaErrorInvalidConfiguration), in words; empty when valid. */
std::string geometry_problem(dim3 grid, dim3 block, std::size_t shared_bytes);

}  // namespace tb::emu
