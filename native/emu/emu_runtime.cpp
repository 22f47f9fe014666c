// The emulated device's runtime: the CUDA runtime functions the engine calls,
// defined against NVIDIA's own declarations (cuda_runtime_api.h), over a memory
// arena, lazily run streams, events, host functions and graph capture. Each rule
// modelled cites the part of the CUDA documentation it follows ("Programming
// Guide" is the CUDA C++ Programming Guide, "Runtime API" the CUDA Runtime API
// reference, both for CUDA 13); the emulator encodes our reading of them, and a
// real GPU stays the authority (docs/adr/0023-emulated-cuda.md).
#include <cuda_runtime_api.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "emu_runtime.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
// Under AddressSanitizer each allocation is followed by a poisoned redzone and a freed one is
// poisoned whole: a kernel writing past its buffer, or reading one after cudaFree, is reported.
constexpr std::size_t kRedzone = 256;
#define TB_EMU_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define TB_EMU_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
constexpr std::size_t kRedzone = 0;
#define TB_EMU_POISON(p, n) ((void)(p), (void)(n))
#define TB_EMU_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

// The opaque handles of driver_types.h, defined here.
struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphNode_st;
struct CUgraphExec_st;

namespace tb::emu {
namespace {

using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------- errors
// Runtime API, "Error Handling": cudaGetLastError returns the last error of a runtime call
// on this host thread and resets it. Errors of work already queued (a kernel that fails)
// surface at the next call that waits for it; the emulator keeps them non-sticky, so one
// failing test does not poison the process as a real fault would.
thread_local cudaError_t t_last = cudaSuccess;
thread_local std::string t_detail;
std::mutex g_async_mu;
cudaError_t g_async = cudaSuccess;
std::string g_async_detail;

cudaError_t fail(cudaError_t e, std::string detail = {}) {
  t_last = e;
  if (!detail.empty()) t_detail = std::move(detail);
  return e;
}

void async_fail(cudaError_t e, const std::string& detail) {
  std::fprintf(stderr, "emulated CUDA: %s\n", detail.c_str());
  std::lock_guard<std::mutex> lock(g_async_mu);
  if (g_async == cudaSuccess) {
    g_async = e;
    g_async_detail = detail;
  }
}

/** After a wait: the error of work that ran meanwhile, once. */
cudaError_t take_async() {
  std::lock_guard<std::mutex> lock(g_async_mu);
  const cudaError_t e = g_async;
  if (e != cudaSuccess) {
    t_last = e;
    t_detail = g_async_detail;
  }
  g_async = cudaSuccess;
  return e;
}

// ---------------------------------------------------------------- memory
// Device memory comes from one arena reserved at start with a capacity (TB_EMU_DEVICE_MEMORY,
// e.g. 2GiB; default 4 GiB) so cudaMalloc fails with cudaErrorMemoryAllocation as a full GPU
// would (Runtime API, cudaMalloc). While no kernel or copy runs the arena is mprotect-ed, so
// host code that dereferences a device pointer faults, as it does with a real GPU.
struct Arena {
  char* base = nullptr;
  std::size_t capacity = 0;
  std::mutex mu;
  std::map<std::size_t, std::size_t> free;  // offset -> bytes
  std::map<std::size_t, std::size_t> used;
  std::size_t in_use = 0;
  int open_depth = 0;  // device sections in progress
  bool protect = true;
};

std::size_t parse_bytes(const char* text, std::size_t fallback) {
  if (!text || !*text) return fallback;
  char* end = nullptr;
  double v = std::strtod(text, &end);
  const std::string unit = end ? end : "";
  if (unit == "GiB" || unit == "G") v *= 1024.0 * 1024 * 1024;
  else if (unit == "MiB" || unit == "M") v *= 1024.0 * 1024;
  else if (unit == "KiB" || unit == "K") v *= 1024.0;
  return v > 0 ? static_cast<std::size_t>(v) : fallback;
}

struct sigaction g_old_segv;

void on_segv(int sig, siginfo_t* info, void* uctx);

Arena& arena() {
  static Arena* a = [] {
    auto* created = new Arena;
    created->capacity = parse_bytes(std::getenv("TB_EMU_DEVICE_MEMORY"), std::size_t(4) << 30);
    created->capacity = (created->capacity + 0xFFFF) & ~std::size_t(0xFFFF);
    created->protect = !std::getenv("TB_EMU_PROTECT") || std::string(std::getenv("TB_EMU_PROTECT")) != "0";
    void* p = mmap(nullptr, created->capacity, created->protect ? PROT_NONE : PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "emulated CUDA: cannot reserve %zu bytes of address space for the device\n", created->capacity);
      std::abort();
    }
    created->base = static_cast<char*>(p);
    created->free[0] = created->capacity;
    if (created->protect) {
      struct sigaction sa {};
      sa.sa_sigaction = on_segv;
      sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
      sigemptyset(&sa.sa_mask);
      sigaction(SIGSEGV, &sa, &g_old_segv);
    }
    return created;
  }();
  return *a;
}

void on_segv(int sig, siginfo_t* info, void* uctx) {
  Arena& a = arena();
  const char* at = static_cast<const char*>(info->si_addr);
  if (at >= a.base && at < a.base + a.capacity) {
    char msg[256];
    const int n = std::snprintf(msg, sizeof msg,
                                "emulated CUDA: host code dereferenced device memory (offset %zu of the device's memory): on a GPU that is a crash too; "
                                "copy it to the host with cudaMemcpy first\n",
                                static_cast<std::size_t>(at - a.base));
    if (n > 0) (void)!write(2, msg, static_cast<std::size_t>(n));
    std::abort();
  }
  // Not ours: whoever handled SIGSEGV before (V8's trap handler, say) decides.
  if (g_old_segv.sa_flags & SA_SIGINFO) {
    if (g_old_segv.sa_sigaction) return g_old_segv.sa_sigaction(sig, info, uctx);
  } else if (g_old_segv.sa_handler != SIG_DFL && g_old_segv.sa_handler != SIG_IGN) {
    return g_old_segv.sa_handler(sig);
  }
  signal(SIGSEGV, SIG_DFL);
  raise(SIGSEGV);
}

/** Kernels and copies touch device memory inside one of these; host code never does. */
struct DeviceSection {
  DeviceSection() {
    Arena& a = arena();
    std::lock_guard<std::mutex> lock(a.mu);
    if (a.protect && a.open_depth++ == 0) mprotect(a.base, a.capacity, PROT_READ | PROT_WRITE);
  }
  ~DeviceSection() {
    Arena& a = arena();
    std::lock_guard<std::mutex> lock(a.mu);
    if (a.protect && --a.open_depth == 0) mprotect(a.base, a.capacity, PROT_NONE);
  }
};

// Pinned host memory (cudaHostAlloc), which asynchronous copies read or write when they run.
std::mutex g_pinned_mu;
std::map<const char*, std::size_t> g_pinned;

bool is_pinned(const void* p) {
  std::lock_guard<std::mutex> lock(g_pinned_mu);
  auto it = g_pinned.upper_bound(static_cast<const char*>(p));
  if (it == g_pinned.begin()) return false;
  --it;
  return static_cast<const char*>(p) < it->first + it->second;
}

}  // namespace

bool is_device_pointer(const void* p) {
  const Arena& a = arena();
  return p >= a.base && p < a.base + a.capacity;
}

namespace {

// ---------------------------------------------------------------- streams
// Programming Guide, "Streams": work in one stream runs in order, work in different streams
// may run in any order. The emulator runs a stream's work only when something waits for it
// (a synchronize, an event, a copy that must complete), on the waiting thread: so a host
// buffer rewritten before its asynchronous copy ran, or memory one stream reuses before
// another finished with it, gives wrong results here as it can on a GPU.
struct Op {
  std::function<void()> run;
  cudaGraphNodeType type = cudaGraphNodeTypeKernel;
};

struct Graph;

}  // namespace
}  // namespace tb::emu

struct CUstream_st {
  unsigned flags = 0;  // cudaStreamNonBlocking: no implicit ordering with the legacy default stream
  std::deque<tb::emu::Op> queue;
  std::uint64_t enqueued = 0;
  // How much of the queue has run; shared with the events recorded here, which outlive a destroyed
  // stream (all of whose work ran first: cudaStreamDestroy completes it).
  struct Progress {
    std::uint64_t completed = 0;
  };
  std::shared_ptr<Progress> progress = std::make_shared<Progress>();
  // Stream capture (Programming Guide, "CUDA Graphs", "Creating a Graph Using Stream Capture").
  tb::emu::Graph* capture = nullptr;
  bool capture_invalid = false;
  std::thread::id capture_thread;
  cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;
};

struct CUevent_st {
  unsigned flags = 0;
  CUstream_st* stream = nullptr;  // only followed while `progress` says the work is pending (the stream then exists)
  std::shared_ptr<CUstream_st::Progress> progress;
  std::uint64_t seq = 0;  // complete once progress->completed reaches this
  bool recorded = false;
  // When the record ran. Shared with the queued record: Runtime API, cudaEventDestroy, "if the event
  // has been recorded but has not yet completed, resources are released when it completes".
  struct Time {
    tb::emu::Clock::time_point when{};
    bool set = false;
  };
  std::shared_ptr<Time> time = std::make_shared<Time>();
};

struct CUgraphNode_st {
  tb::emu::Op op;
};

struct CUgraph_st {
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;
};

struct CUgraphExec_st {
  std::vector<tb::emu::Op> ops;
};

namespace tb::emu {
namespace {

struct Graph : CUgraph_st {};

std::mutex g_mu;  // guards every queue and capture state
// One thread runs device work at a time, as one device would (kernels' __shared__ memory is one copy
// per process); re-entered when an op waits for another stream, which then runs on the same thread.
std::recursive_mutex g_device;
thread_local std::set<CUstream_st*> t_running;
CUstream_st g_legacy;
std::set<CUstream_st*> g_streams;

CUstream_st* real(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy ? &g_legacy : s; }
bool is_legacy(CUstream_st* s) { return s == &g_legacy; }


/** Runs the stream's work up to (not past) position `upto`. */
void flush(CUstream_st* s, std::uint64_t upto) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (s->progress->completed >= upto) return;
  }
  std::lock_guard<std::recursive_mutex> device(g_device);
  for (;;) {
    Op op;
    {
      std::lock_guard<std::mutex> lock(g_mu);
      if (s->progress->completed >= upto || s->queue.empty()) return;
      if (t_running.count(s)) {
        // Work of this stream waits (through events) for later work of the same stream: it never completes.
        async_fail(cudaErrorLaunchFailure, "a stream waits for an event recorded after the wait itself (the work would never run)");
        return;
      }
      op = std::move(s->queue.front());
      s->queue.pop_front();
    }
    t_running.insert(s);
    op.run();
    t_running.erase(s);
    std::lock_guard<std::mutex> lock(g_mu);
    ++s->progress->completed;
  }
}

void flush_all(CUstream_st* s) {
  std::uint64_t upto;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    upto = s->enqueued;
  }
  flush(s, upto);
}

/** The legacy default stream waits for all blocking streams (Programming Guide, "Default Stream"). */
void flush_blocking_streams() {
  std::vector<CUstream_st*> blocking;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (CUstream_st* s : g_streams)
      if (!(s->flags & cudaStreamNonBlocking)) blocking.push_back(s);
  }
  for (CUstream_st* s : blocking) flush_all(s);
}

/**
 * Runtime API, cudaStreamBeginCapture / cudaStreamCaptureMode: while a capture is under way,
 * "potentially unsafe" calls (synchronous copies and memsets, cudaMalloc, synchronising the
 * device) from the capturing thread (ThreadLocal mode) or any thread (Global mode) fail with
 * cudaErrorStreamCaptureUnsupported and invalidate the capture.
 */
bool unsafe_under_capture() {
  std::lock_guard<std::mutex> lock(g_mu);
  bool hit = false;
  for (CUstream_st* s : g_streams) {
    if (!s->capture || s->capture_invalid) continue;
    if (s->capture_mode == cudaStreamCaptureModeRelaxed) continue;
    if (s->capture_mode == cudaStreamCaptureModeThreadLocal && s->capture_thread != std::this_thread::get_id()) continue;
    s->capture_invalid = true;
    hit = true;
  }
  return hit;
}

/** Queues work on a stream (or records it into the stream's capture), or runs it at once on the legacy stream. */
cudaError_t submit(cudaStream_t stream, Op op) {
  CUstream_st* s = real(stream);
  if (is_legacy(s)) {
    if (unsafe_under_capture()) return fail(cudaErrorStreamCaptureImplicit, "work on the legacy default stream while a stream is captured");
    flush_blocking_streams();
    std::lock_guard<std::recursive_mutex> device(g_device);
    op.run();
    return cudaSuccess;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  if (s->capture) {
    if (s->capture_invalid) return fail(cudaErrorStreamCaptureInvalidated);
    s->capture->nodes.push_back(std::make_unique<CUgraphNode_st>(CUgraphNode_st{std::move(op)}));
    return cudaSuccess;
  }
  s->queue.push_back(std::move(op));
  ++s->enqueued;
  return cudaSuccess;
}

}  // namespace

void launch(cudaStream_t stream, Kernel&& k, const std::string& bad_pointer) {
  // Runtime API, "Execution Control": a launch whose configuration the device cannot take fails
  // at once (cudaErrorInvalidConfiguration), reported by cudaGetLastError.
  if (std::string bad = geometry_problem(k.grid, k.block, k.shared_bytes); !bad.empty()) {
    fail(cudaErrorInvalidConfiguration, std::string("kernel ") + k.name + " launched with " + bad);
    return;
  }
  // A host pointer given to a kernel is an illegal address when the kernel reads it.
  if (!bad_pointer.empty()) {
    fail(cudaErrorIllegalAddress, bad_pointer);
    return;
  }
  auto kernel = std::make_shared<Kernel>(std::move(k));
  submit(stream, Op{[kernel] {
                      std::string error;
                      {
                        DeviceSection device;
                        error = run_kernel(*kernel);
                      }
                      if (!error.empty()) async_fail(cudaErrorLaunchFailure, error);
                    },
                    cudaGraphNodeTypeKernel});
}

namespace {

cudaError_t check_copy(const void* dst, const void* src, cudaMemcpyKind kind) {
  const bool d = is_device_pointer(dst), s = is_device_pointer(src);
  // Runtime API, cudaMemcpy: the kind must match where the pointers are (cudaMemcpyDefault infers it).
  const bool ok = kind == cudaMemcpyDefault || (kind == cudaMemcpyHostToDevice && d && !s) || (kind == cudaMemcpyDeviceToHost && !d && s) ||
                  (kind == cudaMemcpyDeviceToDevice && d && s) || (kind == cudaMemcpyHostToHost && !d && !s);
  if (!ok) return fail(cudaErrorInvalidValue, "cudaMemcpy: the copy kind does not match where its pointers lie (host or device)");
  return cudaSuccess;
}

void copy_now(void* dst, const void* src, std::size_t n) {
  DeviceSection device;
  std::memmove(dst, src, n);
}

}  // namespace
}  // namespace tb::emu

using namespace tb::emu;

extern "C" {

// ---------------------------------------------------------------- errors
cudaError_t cudaGetLastError(void) {
  const cudaError_t e = t_last;
  t_last = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError(void) { return t_last; }

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureImplicit: return "cudaErrorStreamCaptureImplicit";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    default: return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t e) {
  // The emulator's own words for this thread's last error (which kernel, which threads, which site).
  if (e == t_last || (!t_detail.empty() && e != cudaSuccess)) {
    if (!t_detail.empty()) return t_detail.c_str();
  }
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorMemoryAllocation: return "out of memory (emulated device)";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    default: return cudaGetErrorName(e);
  }
}

// ---------------------------------------------------------------- device
cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice); }
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}

/** What the emulated device says it is: its name says "emulated (CPU)" wherever a device name is shown. */
constexpr int kEmuSms = 4;
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  if (device != 0) return fail(cudaErrorInvalidDevice);
  std::memset(prop, 0, sizeof *prop);
  std::snprintf(prop->name, sizeof prop->name, "Trainbench emulated CUDA device, emulated (CPU)");
  prop->totalGlobalMem = arena().capacity;
  prop->sharedMemPerBlock = 48 * 1024;
  prop->regsPerBlock = 65536;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = 1024;
  prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 0x7fffffff;
  prop->maxGridSize[1] = 65535;
  prop->maxGridSize[2] = 65535;
  prop->major = 9;  // the kernels' sm_80+ paths (WMMA) run: the build under test is sm_90
  prop->minor = 0;
  prop->multiProcessorCount = kEmuSms;
  prop->l2CacheSize = 4 << 20;
  prop->maxThreadsPerMultiProcessor = 2048;
  prop->unifiedAddressing = 1;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  if (device != 0) return fail(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMultiProcessorCount: *value = kEmuSms; break;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrClockRate: *value = 1000000; break;  // kHz; timings from here are never GPU figures
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    default: *value = 0; return fail(cudaErrorInvalidValue, "emulated CUDA: device attribute " + std::to_string(static_cast<int>(attr)) + " is not modelled");
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* bus, int len, int device) {
  if (device != 0) return fail(cudaErrorInvalidDevice);
  std::snprintf(bus, static_cast<std::size_t>(len), "emulated");
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  if (unsafe_under_capture()) return fail(cudaErrorStreamCaptureUnsupported);
  flush_blocking_streams();
  std::vector<CUstream_st*> all;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    all.assign(g_streams.begin(), g_streams.end());
  }
  for (CUstream_st* s : all) flush_all(s);
  return take_async();
}

// ---------------------------------------------------------------- memory
cudaError_t cudaMalloc(void** ptr, size_t size) {
  *ptr = nullptr;
  if (unsafe_under_capture()) return fail(cudaErrorStreamCaptureUnsupported, "cudaMalloc while a stream is captured (an unsafe call under capture)");
  Arena& a = arena();
  const std::size_t bytes = std::max<std::size_t>(256, (size + kRedzone + 255) & ~std::size_t(255));  // 256-byte aligned, as cudaMalloc guarantees
  std::lock_guard<std::mutex> lock(a.mu);
  for (auto it = a.free.begin(); it != a.free.end(); ++it) {
    if (it->second < bytes || size > a.capacity) continue;
    const std::size_t at = it->first, left = it->second - bytes;
    a.free.erase(it);
    if (left) a.free[at + bytes] = left;
    a.used[at] = bytes;
    a.in_use += bytes;
    *ptr = a.base + at;
    TB_EMU_UNPOISON(a.base + at, size);
    TB_EMU_POISON(a.base + at + size, bytes - size);
    return cudaSuccess;
  }
  return fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaFree(void* ptr) {
  if (!ptr) return cudaSuccess;
  Arena& a = arena();
  if (!is_device_pointer(ptr)) return fail(cudaErrorInvalidValue, "cudaFree of a pointer that is not device memory");
  std::lock_guard<std::mutex> lock(a.mu);
  const std::size_t at = static_cast<std::size_t>(static_cast<char*>(ptr) - a.base);
  auto it = a.used.find(at);
  if (it == a.used.end()) return fail(cudaErrorInvalidValue, "cudaFree of a pointer cudaMalloc did not return (or freed twice)");
  std::size_t bytes = it->second, start = at;
  a.used.erase(it);
  a.in_use -= bytes;
  TB_EMU_POISON(a.base + start, bytes);
  // The pages go back to the OS; the next owner sees zeros, not this one's data (a GPU gives garbage).
  if (bytes >= 1 << 20) madvise(a.base + start, bytes, MADV_DONTNEED);
  auto next = a.free.lower_bound(start);
  if (next != a.free.end() && next->first == start + bytes) {
    bytes += next->second;
    next = a.free.erase(next);
  }
  if (next != a.free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      bytes += prev->second;
      a.free.erase(prev);
    }
  }
  a.free[start] = bytes;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mu);
  *free_bytes = a.capacity - a.in_use;
  *total = a.capacity;
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, std::max<std::size_t>(size, 1)) != 0) return fail(cudaErrorMemoryAllocation);
  std::lock_guard<std::mutex> lock(g_pinned_mu);
  g_pinned[static_cast<const char*>(p)] = size;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* ptr) {
  if (!ptr) return cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(g_pinned_mu);
    if (!g_pinned.erase(static_cast<const char*>(ptr))) return fail(cudaErrorInvalidValue, "cudaFreeHost of a pointer cudaHostAlloc did not return");
  }
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, enum cudaMemcpyKind kind) {
  if (cudaError_t e = check_copy(dst, src, kind); e != cudaSuccess) return e;
  // Synchronous: on the legacy default stream, after all work queued before it (Runtime API, "API synchronization behavior").
  if (unsafe_under_capture()) return fail(cudaErrorStreamCaptureUnsupported, "cudaMemcpy while a stream is captured (an unsafe call under capture)");
  flush_blocking_streams();
  copy_now(dst, src, n);
  return take_async();
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, enum cudaMemcpyKind kind, cudaStream_t stream) {
  if (cudaError_t e = check_copy(dst, src, kind); e != cudaSuccess) return e;
  CUstream_st* s = real(stream);
  const bool to_device = is_device_pointer(dst), from_device = is_device_pointer(src);
  // Runtime API, "API synchronization behavior": a copy from pageable host memory is staged before
  // the call returns, so the source is read now; to pageable memory the call returns once the copy
  // completed. With pinned memory both happen when the stream runs the copy.
  if (!from_device && !is_pinned(src) && !s->capture) {
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src), static_cast<const char*>(src) + n);
    return submit(stream, Op{[dst, staged] { copy_now(dst, staged->data(), staged->size()); }, cudaGraphNodeTypeMemcpy});
  }
  if (!to_device && !is_pinned(dst) && !s->capture) {
    submit(stream, Op{[dst, src, n] { copy_now(dst, src, n); }, cudaGraphNodeTypeMemcpy});
    if (!is_legacy(s)) flush_all(s);
    return take_async();
  }
  return submit(stream, Op{[dst, src, n] { copy_now(dst, src, n); }, cudaGraphNodeTypeMemcpy});
}

cudaError_t cudaMemset(void* ptr, int value, size_t n) {
  if (!is_device_pointer(ptr)) return fail(cudaErrorInvalidValue, "cudaMemset of a pointer that is not device memory");
  if (unsafe_under_capture()) return fail(cudaErrorStreamCaptureUnsupported, "cudaMemset while a stream is captured (an unsafe call under capture)");
  flush_blocking_streams();
  DeviceSection device;
  std::memset(ptr, value, n);
  return take_async();
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t n, cudaStream_t stream) {
  if (!is_device_pointer(ptr)) return fail(cudaErrorInvalidValue, "cudaMemsetAsync of a pointer that is not device memory");
  return submit(stream, Op{[ptr, value, n] {
                             DeviceSection device;
                             std::memset(ptr, value, n);
                           },
                           cudaGraphNodeTypeMemset});
}

// ---------------------------------------------------------------- streams
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  auto* s = new CUstream_st;
  s->flags = flags;
  std::lock_guard<std::mutex> lock(g_mu);
  g_streams.insert(s);
  *stream = s;
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  CUstream_st* s = real(stream);
  if (is_legacy(s)) return fail(cudaErrorInvalidResourceHandle);
  // Runtime API, cudaStreamDestroy: work already queued still completes.
  flush_all(s);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_streams.erase(s);
  }
  delete s;
  return take_async();
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  CUstream_st* s = real(stream);
  {
    // Programming Guide, "Prohibited and Unhandled Operations": synchronising a stream being captured is invalid.
    std::lock_guard<std::mutex> lock(g_mu);
    if (s->capture) {
      s->capture_invalid = true;
      return fail(cudaErrorStreamCaptureUnsupported);
    }
  }
  if (is_legacy(s)) flush_blocking_streams();
  else flush_all(s);
  return take_async();
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  CUstream_st* s = real(stream);
  std::lock_guard<std::mutex> lock(g_mu);
  if (s->capture) {
    s->capture_invalid = true;
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  return s->progress->completed < s->enqueued ? cudaErrorNotReady : cudaSuccess;
}

/** Whether the event's work ran (or there is none); to be called with g_mu held. */
bool event_complete(const CUevent_st* e) { return !e->recorded || !e->stream || e->progress->completed >= e->seq; }

/** Runs the work an event waits for, unless it ran. */
void wait_for(CUstream_st* stream, const std::shared_ptr<CUstream_st::Progress>& progress, std::uint64_t seq) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (progress->completed >= seq) return;
  }
  flush(stream, seq);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  if (!event) return fail(cudaErrorInvalidResourceHandle);
  CUstream_st* waited = event->stream;
  const std::uint64_t seq = event->seq;
  auto progress = event->progress;
  if (!event->recorded || !waited) return cudaSuccess;  // an event never recorded is complete (Runtime API, cudaStreamWaitEvent)
  return submit(stream, Op{[waited, progress, seq] { wait_for(waited, progress, seq); }, cudaGraphNodeTypeWaitEvent});
}

}  // extern "C" pauses here

namespace tb::emu {

/**
 * Runs a poisoning change in the stream's order: queued on a stream, after the work queued before
 * it; on the legacy stream after the blocking streams' work, as the legacy stream waits for it;
 * `captured` instead while the stream is captured (and nothing on the legacy stream while any
 * stream is, which legacy work would invalidate).
 */
void in_stream_order(cudaStream_t stream, std::function<void()> change, const std::function<void()>& captured) {
  CUstream_st* s = real(stream);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!is_legacy(s) && !s->capture) {
      s->queue.push_back(Op{std::move(change), cudaGraphNodeTypeEmpty});
      ++s->enqueued;
      return;
    }
    if (s->capture) {
      if (captured) captured();
      return;
    }
    for (CUstream_st* other : g_streams)
      if (other->capture) return;
  }
  flush_blocking_streams();
  std::lock_guard<std::recursive_mutex> device(g_device);
  change();
}

void memory_lent(void* ptr, std::size_t bytes, std::size_t block, cudaStream_t stream, bool fresh) {
  if (!kRedzone || !ptr) return;
  char* p = static_cast<char*>(ptr);
  auto lend = [p, bytes, block] {
    TB_EMU_UNPOISON(p, bytes);
    TB_EMU_POISON(p + bytes, block - bytes);
  };
  if (fresh) return lend();  // nobody's work is queued on it
  in_stream_order(stream, lend, [p, bytes] { TB_EMU_UNPOISON(p, bytes); });
}

void memory_returned(void* ptr, std::size_t block, cudaStream_t stream) {
  if (!kRedzone || !ptr) return;
  char* p = static_cast<char*>(ptr);
  in_stream_order(stream, [p, block] { TB_EMU_POISON(p, block); }, nullptr);
}

}  // namespace tb::emu

extern "C" {

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* data) { return submit(stream, Op{[fn, data] { fn(data); }, cudaGraphNodeTypeHost}); }

// ---------------------------------------------------------------- events
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  auto* e = new CUevent_st;
  e->flags = flags;
  *event = e;
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (!event) return fail(cudaErrorInvalidResourceHandle);
  CUstream_st* s = real(stream);
  std::unique_lock<std::mutex> lock(g_mu);
  if (s->capture) {
    if (s->capture_invalid) return fail(cudaErrorStreamCaptureInvalidated);
    // A record node marks the event itself at each replay (a graph's events must outlive it, as in CUDA).
    s->capture->nodes.push_back(std::make_unique<CUgraphNode_st>(CUgraphNode_st{Op{[event] {
                                                                                      event->time->when = Clock::now();
                                                                                      event->time->set = true;
                                                                                    },
                                                                                    cudaGraphNodeTypeEventRecord}}));
    return cudaSuccess;
  }
  // A new record has a time of its own: a previous record's marker, still queued, keeps the old one.
  auto time = std::make_shared<CUevent_st::Time>();
  event->time = time;
  event->recorded = true;
  if (is_legacy(s)) {
    // The legacy stream's work runs at once, after the blocking streams' (Programming Guide, "Default
    // Stream"): the record completes there and then.
    event->stream = nullptr;
    lock.unlock();
    return submit(stream, Op{[time] {
                               time->when = Clock::now();
                               time->set = true;
                             },
                             cudaGraphNodeTypeEventRecord});
  }
  s->queue.push_back(Op{[time] {
                          time->when = Clock::now();
                          time->set = true;
                        },
                        cudaGraphNodeTypeEventRecord});
  event->stream = s;
  event->progress = s->progress;
  event->seq = ++s->enqueued;
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (!event) return fail(cudaErrorInvalidResourceHandle);
  if (event->recorded && event->stream) wait_for(event->stream, event->progress, event->seq);
  return take_async();
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (!event) return fail(cudaErrorInvalidResourceHandle);
  // Runtime API, cudaEventQuery: cudaErrorNotReady while the work before the record has not run. Nothing
  // runs it here: work runs only when waited for, so a query alone never makes progress (a loop that
  // polls without waiting would spin forever here; the engine's allocator only asks).
  std::lock_guard<std::mutex> lock(g_mu);
  return event_complete(event) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  // Runtime API, cudaEventElapsedTime: both must be recorded, complete, and created with timing.
  if (!start || !end || (start->flags & cudaEventDisableTiming) || (end->flags & cudaEventDisableTiming)) return fail(cudaErrorInvalidResourceHandle);
  if (!start->time->set || !end->time->set) return fail(cudaErrorNotReady);
  // Host time between the two markers' runs: never a GPU figure (every result says "emulated").
  *ms = std::chrono::duration<float, std::milli>(end->time->when - start->time->when).count();
  return cudaSuccess;
}

// ---------------------------------------------------------------- graphs
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  CUstream_st* s = real(stream);
  // Programming Guide, "Stream Capture": the legacy stream cannot be captured.
  if (is_legacy(s)) return fail(cudaErrorStreamCaptureUnsupported, "the legacy default stream cannot be captured");
  std::lock_guard<std::mutex> lock(g_mu);
  if (s->capture) return fail(cudaErrorIllegalState, "the stream is already being captured");
  s->capture = new Graph;
  s->capture_invalid = false;
  s->capture_thread = std::this_thread::get_id();
  s->capture_mode = mode;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  CUstream_st* s = real(stream);
  std::lock_guard<std::mutex> lock(g_mu);
  *graph = nullptr;
  if (!s->capture) return fail(cudaErrorIllegalState, "the stream is not being captured");
  Graph* g = s->capture;
  const bool invalid = s->capture_invalid;
  s->capture = nullptr;
  s->capture_invalid = false;
  if (invalid) {
    delete g;
    return fail(cudaErrorStreamCaptureInvalidated);
  }
  *graph = g;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus* status) {
  CUstream_st* s = real(stream);
  std::lock_guard<std::mutex> lock(g_mu);
  *status = !s->capture ? cudaStreamCaptureStatusNone : s->capture_invalid ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  if (!graph) return fail(cudaErrorInvalidValue);
  if (!nodes) {
    *count = graph->nodes.size();
    return cudaSuccess;
  }
  const std::size_t n = std::min(*count, graph->nodes.size());
  for (std::size_t i = 0; i < n; ++i) nodes[i] = graph->nodes[i].get();
  *count = n;
  return cudaSuccess;
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType* type) {
  if (!node) return fail(cudaErrorInvalidValue);
  *type = node->op.type;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (!graph) return fail(cudaErrorInvalidValue);
  auto* e = new CUgraphExec_st;
  for (const auto& n : graph->nodes) e->ops.push_back(n->op);
  *exec = e;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (!exec) return fail(cudaErrorInvalidValue);
  // The nodes of a captured stream form a chain: replayed in order, with the arguments they were captured with.
  for (const Op& op : exec->ops)
    if (cudaError_t e = submit(stream, op); e != cudaSuccess) return e;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete static_cast<Graph*>(graph);
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}

}  // extern "C"
