// The emulated device's scheduler: see emu_kernel.h. Each CUDA thread is a
// Boost.Context fiber on a pooled stack; a block's fibers run in the chosen
// order until each one waits (at a barrier or a warp collective) or ends, then
// the waits are resolved or diagnosed. Under ThreadSanitizer each fiber is a
// TSan fiber switched without synchronisation, so the only happens-before edges
// are the ones CUDA gives: kernel start, each barrier (a fresh token per block
// and phase), each warp collective, block end (see the ADR for why blocks are
// chained) and kernel end.
#include "emu_kernel.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/context/fiber.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

// TB_EMU_TSAN comes from the build: the kernels are instrumented, this file is not (its own
// bookkeeping between fibers and scheduler would otherwise read as races).
#if defined(TB_EMU_TSAN) && TB_EMU_TSAN
extern "C" {
void* __tsan_get_current_fiber(void);
void* __tsan_create_fiber(unsigned flags);
void __tsan_switch_to_fiber(void* fiber, unsigned flags);
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
}
#else
#undef TB_EMU_TSAN
#define TB_EMU_TSAN 0
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TB_EMU_ASAN 1
#include <sanitizer/common_interface_defs.h>
#else
#define TB_EMU_ASAN 0
#endif

namespace ctx = boost::context;

namespace tb::emu {

const KernelConfig& kernel_config() {
  static const KernelConfig config = [] {
    KernelConfig c;
    const char* v = std::getenv("TB_EMU_ORDER");
    const std::string s = v ? v : "forward";
    if (s == "reverse") c.order = Order::Reverse;
    else if (s.rfind("random", 0) == 0) {
      c.order = Order::Random;
      if (s.size() > 7) c.seed = std::strtoull(s.c_str() + 7, nullptr, 10);
    } else if (s != "forward") {
      std::fprintf(stderr, "TB_EMU_ORDER=%s is not forward, reverse or random:SEED\n", s.c_str());
      std::abort();
    }
    return c;
  }();
  return config;
}

namespace {

// Kernels keep tiles and WMMA fragments (1 KiB each) on the stack; pages are touched only as used.
constexpr std::size_t kStackBytes = 256 * 1024;

std::size_t page_bytes() {
  static const std::size_t p = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

// Stacks are mapped once per host thread and reused: a kernel creates a fiber per CUDA thread. The
// free list is threaded through the dead stacks themselves: no library template runs here, which
// under ThreadSanitizer could be an instrumented copy, and a fiber unwound after its block failed
// gives its stack back from its own TSan fiber.
struct StackPool {
  void* head = nullptr;
  ~StackPool() {
    while (head) {
      void* next = *static_cast<void**>(head);
      munmap(static_cast<char*>(head) - page_bytes(), kStackBytes + page_bytes());
      head = next;
    }
  }
};
thread_local StackPool g_stacks;

// The stack the last PooledStack::allocate handed out (ASan is told about each fiber's stack).
thread_local ctx::stack_context g_last_stack;

struct PooledStack {
  ctx::stack_context allocate() {
    char* usable;
    if (g_stacks.head) {
      usable = static_cast<char*>(g_stacks.head);
      g_stacks.head = *static_cast<void**>(g_stacks.head);
    } else {
      void* base = mmap(nullptr, kStackBytes + page_bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (base == MAP_FAILED) throw std::bad_alloc();
      mprotect(base, page_bytes(), PROT_NONE);  // guard page: a stack overflow faults instead of corrupting
      usable = static_cast<char*>(base) + page_bytes();
    }
    ctx::stack_context sc;
    sc.size = kStackBytes;
    sc.sp = usable + kStackBytes;
    g_last_stack = sc;
    return sc;
  }
  void deallocate(ctx::stack_context& sc) noexcept {
    void* usable = static_cast<char*>(sc.sp) - kStackBytes;  // the lowest word of a dead stack holds the link
    *static_cast<void**>(usable) = g_stacks.head;
    g_stacks.head = usable;
  }
};

enum class State { Runnable, Barrier, Warp, Done };

struct Thread {
  uint3 tid{};
  unsigned linear = 0, lane = 0, warp = 0;
  State state = State::Runnable;
  const char* file = "";
  int line = 0;
  ctx::fiber fiber, sched;
  WarpOp op = WarpOp::Sync;
  unsigned mask = 0;
  int arg = 0, width = 32;
  std::size_t size = 0;
  unsigned char in[8]{}, out[8]{};
#if TB_EMU_TSAN
  void* tsan = nullptr;
#endif
#if TB_EMU_ASAN
  const void* stack_bottom = nullptr;
  std::size_t stack_size = 0;
#endif
};

struct Block {
  uint3 bid{};
  dim3 bdim, gdim;
  std::vector<Thread> threads;
  std::string error;
  bool abandon = false;  // the block failed: each waiting fiber, resumed, unwinds its kernel
  const Thread* running = nullptr;  // the fiber last resumed: the one a watchdog finds still running
};

thread_local Block* g_block = nullptr;
thread_local Thread* g_thread = nullptr;
#if TB_EMU_TSAN
thread_local void* g_sched_tsan = nullptr;
#endif
#if TB_EMU_ASAN
thread_local const void* g_sched_bottom = nullptr;
thread_local std::size_t g_sched_size = 0;
#endif

/**
 * Copies a shuffled value (1, 2, 4 or 8 bytes) with fixed-size moves the compiler inlines: a call
 * to memcpy would be intercepted by ThreadSanitizer even here, and read as a race between fibers.
 */
void copy_value(void* dst, const void* src, std::size_t size) {
  switch (size) {
    case 1: std::memcpy(dst, src, 1); break;
    case 2: std::memcpy(dst, src, 2); break;
    case 4: std::memcpy(dst, src, 4); break;
    case 8: std::memcpy(dst, src, 8); break;
    default: for (std::size_t i = 0; i < size; ++i) static_cast<volatile unsigned char*>(dst)[i] = static_cast<const unsigned char*>(src)[i];
  }
}

std::string site(const char* file, int line) {
  const char* slash = std::strrchr(file, '/');
  return std::string(slash ? slash + 1 : file) + ":" + std::to_string(line);
}

#if TB_EMU_TSAN
// Sync tokens need distinct addresses nothing else uses: a reserved, never-touched range.
void* fresh_token() {
  static char* base = static_cast<char*>(mmap(nullptr, 64 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  static std::atomic<std::uint64_t> next{0};
  return base + (next.fetch_add(1) % ((64 << 20) / 8)) * 8;
}
#endif

/** Thrown in a waiting fiber of a failed block, caught at the fiber's top: its kernel unwinds. */
struct Abandon {};

// The fiber's side of a switch back to the scheduler.
void yield_to_scheduler(Thread* t) {
#if TB_EMU_TSAN
  __tsan_switch_to_fiber(g_sched_tsan, 1 /* __tsan_switch_to_fiber_no_sync */);
#endif
#if TB_EMU_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, g_sched_bottom, g_sched_size);
#endif
  t->sched = std::move(t->sched).resume();
#if TB_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake, &g_sched_bottom, &g_sched_size);
#endif
  // Unwound by an exception of ours, resumed as usual: letting Boost destroy a suspended fiber would
  // unwind it without telling ThreadSanitizer or AddressSanitizer which stack runs.
  if (g_block && g_block->abandon) throw Abandon{};
}

void resume(Thread* t) {
  g_thread = t;
  if (g_block) g_block->running = t;
  detail::t_builtins.tid = t->tid;
#if TB_EMU_TSAN
  __tsan_switch_to_fiber(t->tsan, 1);
#endif
#if TB_EMU_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, t->stack_bottom, t->stack_size);
#endif
  t->fiber = std::move(t->fiber).resume();
#if TB_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  g_thread = nullptr;
}

#if TB_EMU_TSAN
// TSan fiber contexts are costly to make (each maps its own state): kept per host thread and reused by
// the threads of each block in turn. Thread i of one block then follows thread i of the block before in
// program order, which adds nothing: blocks are chained anyway (see the file's comment).
thread_local std::vector<void*> g_tsan_fibers;
void* tsan_fiber(unsigned i) {
  while (g_tsan_fibers.size() <= i) g_tsan_fibers.push_back(__tsan_create_fiber(0));
  return g_tsan_fibers[i];
}

/** Happens-before among `threads`: each releases the token as itself, then each acquires it. */
void tsan_meet(const std::vector<Thread*>& threads) {
  void* token = fresh_token();
  for (Thread* t : threads) {
    __tsan_switch_to_fiber(t->tsan, 1);
    __tsan_release(token);
  }
  for (Thread* t : threads) {
    __tsan_switch_to_fiber(t->tsan, 1);
    __tsan_acquire(token);
  }
  __tsan_switch_to_fiber(g_sched_tsan, 1);
}
#endif

Thread& current(const char* what) {
  if (!g_thread) {
    std::fprintf(stderr, "emulated CUDA: %s called outside a kernel\n", what);
    std::abort();
  }
  return *g_thread;
}

/** Threads as ranges for messages: "threads 0-31, 64". */
std::string ranges(const std::vector<unsigned>& ids) {
  std::ostringstream out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (i) out << ", ";
    out << ids[i];
    if (j > i) out << "-" << ids[j];
    i = j + 1;
  }
  return out.str();
}

/** Where the block's waiting threads are: "at kernels.cu:12: threads 0-127; exited: 128-255". */
std::string waits(const Block& b) {
  std::map<std::string, std::vector<unsigned>> at;
  for (const Thread& t : b.threads) {
    std::string where;
    switch (t.state) {
      case State::Done: where = "exited"; break;
      case State::Barrier: where = "__syncthreads at " + site(t.file, t.line); break;
      case State::Warp: where = "warp collective at " + site(t.file, t.line); break;
      case State::Runnable: where = &t == b.running ? "running, never back at a barrier or collective" : "yet to run"; break;
    }
    at[where].push_back(t.linear);
  }
  std::ostringstream out;
  bool first = true;
  for (auto& [where, ids] : at) {
    out << (first ? "" : "; ") << where << ": threads " << ranges(ids);
    first = false;
  }
  return out.str();
}

std::string block_name(const Block& b) {
  return "block (" + std::to_string(b.bid.x) + "," + std::to_string(b.bid.y) + "," + std::to_string(b.bid.z) + ")";
}

/**
 * Completes the warp collectives all of whose lanes arrived. Returns whether one completed;
 * sets b.error on a collective CUDA leaves undefined (a lane of the mask exited, lanes of
 * one mask at different sites, a source lane outside the mask).
 */
bool complete_warp_ops(Block& b) {
  bool done_any = false;
  const unsigned warps = static_cast<unsigned>((b.threads.size() + 31) / 32);
  for (unsigned w = 0; w < warps && b.error.empty(); ++w) {
    Thread* lanes[32] = {};
    for (unsigned l = 0; l < 32 && w * 32 + l < b.threads.size(); ++l) lanes[l] = &b.threads[w * 32 + l];
    for (unsigned l = 0; l < 32; ++l) {
      Thread* t = lanes[l];
      if (!t || t->state != State::Warp) continue;
      bool complete = true;
      for (unsigned m = 0; m < 32; ++m) {
        if (!(t->mask >> m & 1u)) continue;
        Thread* o = lanes[m];
        if (!o) {
          b.error = "warp collective at " + site(t->file, t->line) + ": mask 0x" + [&] { char h[9]; std::snprintf(h, 9, "%08x", t->mask); return std::string(h); }() +
                    " names lane " + std::to_string(m) + " of warp " + std::to_string(w) + ", which the block does not have";
          return false;
        }
        if (o->state == State::Done) {
          b.error = "warp collective at " + site(t->file, t->line) + " in warp " + std::to_string(w) + ": lane " + std::to_string(m) + " of its mask exited before reaching it";
          return false;
        }
        if (o->state == State::Warp && (o->file != t->file || o->line != t->line || o->mask != t->mask)) {
          b.error = "divergent warp collectives in warp " + std::to_string(w) + ": lane " + std::to_string(l) + " at " + site(t->file, t->line) + ", lane " +
                    std::to_string(m) + " at " + site(o->file, o->line) + " (every lane of the mask must reach the same one)";
          return false;
        }
        if (o->state != State::Warp) complete = false;  // at a barrier: can never arrive (reported as a deadlock)
      }
      if (!complete) continue;
      for (unsigned m = 0; m < 32; ++m) {
        if (!(t->mask >> m & 1u)) continue;
        Thread* o = lanes[m];
        const int width = o->width, base = static_cast<int>(m) / width * width, rel = static_cast<int>(m) % width;
        int src = static_cast<int>(m);
        switch (o->op) {
          case WarpOp::ShflIdx: src = base + ((o->arg % width) + width) % width; break;
          case WarpOp::ShflUp: src = rel >= o->arg ? static_cast<int>(m) - o->arg : static_cast<int>(m); break;
          case WarpOp::ShflDown: src = rel + o->arg < width ? static_cast<int>(m) + o->arg : static_cast<int>(m); break;
          case WarpOp::ShflXor: src = base + ((rel ^ o->arg) % width); break;
          case WarpOp::Sync: break;
        }
        if (o->op != WarpOp::Sync && !(t->mask >> src & 1u)) {
          b.error = "shuffle at " + site(o->file, o->line) + ": lane " + std::to_string(m) + " reads lane " + std::to_string(src) + ", which is not in the mask";
          return false;
        }
        copy_value(o->out, lanes[src]->in, o->size);
      }
      std::vector<Thread*> met;
      for (unsigned m = 0; m < 32; ++m)
        if (t->mask >> m & 1u) met.push_back(lanes[m]);
#if TB_EMU_TSAN
      tsan_meet(met);  // a collective orders its lanes as a barrier does
#endif
      for (Thread* o : met) o->state = State::Runnable;
      done_any = true;
    }
  }
  return done_any;
}

std::vector<unsigned> order_of(unsigned n, std::mt19937_64& rng) {
  std::vector<unsigned> ids(n);
  for (unsigned i = 0; i < n; ++i) ids[i] = i;
  const KernelConfig& c = kernel_config();
  if (c.order == Order::Reverse) std::reverse(ids.begin(), ids.end());
  else if (c.order == Order::Random) std::shuffle(ids.begin(), ids.end(), rng);
  return ids;
}

// ---- a watchdog, so a kernel that never ends (a loop waiting on another block, which the
// emulator runs later) ends the process with its name instead of hanging CI.
struct Watched {
  std::chrono::steady_clock::time_point since;
  std::string kernel;
  Block* const* block = nullptr;  // the launching thread's g_block
};
struct Watch {
  std::mutex mu;
  std::map<std::thread::id, Watched> running;
};
Watch& watch() {
  static Watch* w = [] {
    auto* created = new Watch;
    const char* env = std::getenv("TB_EMU_KERNEL_TIMEOUT_S");
    const double limit = env ? std::atof(env) : 300.0;
    std::thread([created, limit] {
      for (;;) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        std::lock_guard<std::mutex> lock(created->mu);
        for (auto& [id, r] : created->running) {
          if (std::chrono::duration<double>(std::chrono::steady_clock::now() - r.since).count() > limit) {
            // The block is read while its fiber spins: racy, but the process ends here, and where the
            // other threads wait is what finds the loop.
            const Block* b = r.block ? *r.block : nullptr;
            const std::string where = b ? ", " + block_name(*b) + ": " + waits(*b) : "";
            std::fprintf(stderr,
                         "emulated CUDA: kernel %s ran longer than %.0f s (TB_EMU_KERNEL_TIMEOUT_S)%s; a loop waiting on a thread or block that can only run after it? ending the process\n",
                         r.kernel.c_str(), limit, where.c_str());
            std::fflush(stderr);
            std::_Exit(70);
          }
        }
      }
    }).detach();
    return created;
  }();
  return *w;
}

}  // namespace

namespace detail {
thread_local Builtins t_builtins{};
}  // namespace detail

void sync_threads(const char* file, int line) {
  Thread& t = current("__syncthreads");
  t.state = State::Barrier;
  t.file = file;
  t.line = line;
  yield_to_scheduler(&t);
}

void warp_collective(WarpOp op, unsigned mask, const void* value, void* out, std::size_t size, int arg, int width, const char* file, int line) {
  Thread& t = current("a warp collective");
  if (size > sizeof(t.in) || width < 1 || width > 32 || (width & (width - 1)) != 0 || !(mask >> t.lane & 1u)) {
    std::fprintf(stderr, "emulated CUDA: warp collective at %s: %s\n", site(file, line).c_str(),
                 !(mask >> t.lane & 1u) ? "the calling lane is not in its own mask" : "width must be a power of 2 up to 32 (and values at most 8 bytes)");
    std::abort();
  }
  t.state = State::Warp;
  t.op = op;
  t.mask = mask;
  t.arg = arg;
  t.width = width;
  t.size = size;
  t.file = file;
  t.line = line;
  if (size) copy_value(t.in, value, size);
  yield_to_scheduler(&t);
  if (size) copy_value(out, t.out, size);
}

std::string geometry_problem(dim3 grid, dim3 block, std::size_t shared_bytes) {
  // CUDA C Programming Guide, "Compute Capabilities", table of technical specifications.
  const std::uint64_t threads = static_cast<std::uint64_t>(block.x) * block.y * block.z;
  if (threads == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0) return "a zero grid or block dimension";
  if (threads > 1024) return "a block of " + std::to_string(threads) + " threads (at most 1024)";
  if (block.z > 64) return "blockDim.z " + std::to_string(block.z) + " (at most 64)";
  if (grid.y > 65535 || grid.z > 65535) return "gridDim.y or .z over 65535";
  if (shared_bytes > 48 * 1024) return std::to_string(shared_bytes) + " bytes of dynamic shared memory (48 KiB without opting in)";
  return {};
}

std::string run_kernel(const Kernel& k) {
  if (std::string bad = geometry_problem(k.grid, k.block, k.shared_bytes); !bad.empty()) return bad;
  static std::atomic<std::uint64_t> launches{0};
  std::mt19937_64 rng(kernel_config().seed * 0x9E3779B97F4A7C15ull + launches.fetch_add(1));
  const unsigned nthreads = k.block.x * k.block.y * k.block.z;
  const std::uint64_t nblocks = static_cast<std::uint64_t>(k.grid.x) * k.grid.y * k.grid.z;
  {
    std::lock_guard<std::mutex> lock(watch().mu);
    watch().running[std::this_thread::get_id()] = {std::chrono::steady_clock::now(), std::string(k.name) + " (launched at " + site(k.file, k.line) + ")", &g_block};
  }
  struct Unwatch {
    ~Unwatch() {
      std::lock_guard<std::mutex> lock(watch().mu);
      watch().running.erase(std::this_thread::get_id());
    }
  } unwatch;

  // Blocks in the chosen order too; a grid of millions of blocks is walked without a list.
  std::vector<unsigned> block_order;
  const bool list_blocks = kernel_config().order == Order::Random && nblocks <= (1u << 20);
  if (list_blocks) block_order = order_of(static_cast<unsigned>(nblocks), rng);
  Block b;
  b.bdim = k.block;
  b.gdim = k.grid;
#if TB_EMU_TSAN
  if (!g_sched_tsan) g_sched_tsan = __tsan_get_current_fiber();
  void* chain = fresh_token();  // kernel start: what the host did before the launch happens before every thread
  __tsan_release(chain);
#endif
  for (std::uint64_t n = 0; n < nblocks; ++n) {
    std::uint64_t id = list_blocks ? block_order[n] : (kernel_config().order == Order::Reverse ? nblocks - 1 - n : n);
    b.bid = uint3{static_cast<unsigned>(id % k.grid.x), static_cast<unsigned>(id / k.grid.x % k.grid.y), static_cast<unsigned>(id / k.grid.x / k.grid.y)};
    b.threads = std::vector<Thread>(nthreads);
    b.error.clear();
    b.running = nullptr;
#if TB_EMU_TSAN
    void* block_start = chain;
    void* block_end = fresh_token();
#endif
    for (unsigned i = 0; i < nthreads; ++i) {
      Thread& t = b.threads[i];
      t.linear = i;
      t.tid = uint3{i % k.block.x, i / k.block.x % k.block.y, i / k.block.x / k.block.y};
      t.lane = i % 32;
      t.warp = i / 32;
#if TB_EMU_TSAN
      t.tsan = tsan_fiber(i);
#endif
      t.fiber = ctx::fiber(std::allocator_arg, PooledStack{}, [&t, &k
#if TB_EMU_TSAN
                                                         , block_start, block_end
#endif
      ](ctx::fiber&& s) {
        t.sched = std::move(s);
#if TB_EMU_ASAN
        __sanitizer_finish_switch_fiber(nullptr, &g_sched_bottom, &g_sched_size);
#endif
#if TB_EMU_TSAN
        __tsan_acquire(block_start);
#endif
        try {
          k.body();
        } catch (const Abandon&) {
        }
#if TB_EMU_TSAN
        __tsan_release(block_end);
        __tsan_switch_to_fiber(g_sched_tsan, 1);
#endif
        t.state = State::Done;
#if TB_EMU_ASAN
        __sanitizer_start_switch_fiber(nullptr, g_sched_bottom, g_sched_size);  // this fiber's stack is done for good
#endif
        return std::move(t.sched);
      });
#if TB_EMU_ASAN
      t.stack_bottom = static_cast<char*>(g_last_stack.sp) - g_last_stack.size;
      t.stack_size = g_last_stack.size;
#endif
    }
    g_block = &b;
    detail::t_builtins.bid = b.bid;
    detail::t_builtins.bdim = b.bdim;
    detail::t_builtins.gdim = b.gdim;
    const std::vector<unsigned> order = order_of(nthreads, rng);
    for (;;) {
      for (unsigned i : order)
        if (b.threads[i].state == State::Runnable) resume(&b.threads[i]);
      if (std::all_of(b.threads.begin(), b.threads.end(), [](const Thread& t) { return t.state == State::Done; })) break;
      if (complete_warp_ops(b)) continue;
      if (!b.error.empty()) break;
      std::size_t done = 0, barrier = 0;
      for (const Thread& t : b.threads) {
        done += t.state == State::Done;
        barrier += t.state == State::Barrier;
      }
      if (barrier + done == b.threads.size()) {
        if (done > 0) {
          b.error = "__syncthreads reached after some threads of the block exited (" + waits(b) + ")";
          break;
        }
        const Thread& first = b.threads[0];
        const bool same = std::all_of(b.threads.begin(), b.threads.end(), [&](const Thread& t) { return t.file == first.file && t.line == first.line; });
        if (!same) {
          b.error = "divergent __syncthreads: threads wait at different barriers (" + waits(b) + ")";
          break;
        }
#if TB_EMU_TSAN
        // A barrier: everything before it in any thread happens before everything after it in all.
        std::vector<Thread*> all;
        for (Thread& t : b.threads) all.push_back(&t);
        tsan_meet(all);
#endif
        for (Thread& t : b.threads) t.state = State::Runnable;
        continue;
      }
      b.error = "deadlock: no thread can go on (" + waits(b) + ")";
      break;
    }
    if (!b.error.empty()) {
      b.abandon = true;
      for (Thread& t : b.threads)
        if (t.state != State::Done) resume(&t);
      b.abandon = false;
    }
    g_block = nullptr;
    std::string error = b.error;
#if TB_EMU_TSAN
    chain = block_end;
#endif
    b.threads.clear();
#if TB_EMU_TSAN
    if (!error.empty()) __tsan_acquire(chain);  // the blocks that ran happen before the host's next step
#endif
    if (!error.empty()) return std::string(k.name) + " (launched at " + site(k.file, k.line) + "), " + block_name(b) + ": " + error;
  }
#if TB_EMU_TSAN
  __tsan_acquire(chain);  // kernel end: every thread's work happens before what the host does next
#endif
  return {};
}

}  // namespace tb::emu
