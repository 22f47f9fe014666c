// The emulated device's runtime, part 2: device memory (an arena with a capacity, protected from
// host code), pinned host memory, copies and memsets (emu_internal.h has what the parts share).
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "emu_internal.h"

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

namespace tb::emu {
namespace {

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


// Pinned host memory (cudaHostAlloc), which asynchronous copies read or write when they run.
std::mutex g_pinned_mu;
std::map<const char*, std::size_t> g_pinned;



}  // namespace

bool is_device_pointer(const void* p) {
  const Arena& a = arena();
  return p >= a.base && p < a.base + a.capacity;
}

bool is_pinned(const void* p) {
  std::lock_guard<std::mutex> lock(g_pinned_mu);
  auto it = g_pinned.upper_bound(static_cast<const char*>(p));
  if (it == g_pinned.begin()) return false;
  --it;
  return static_cast<const char*>(p) < it->first + it->second;
}

std::size_t device_capacity() { return arena().capacity; }

DeviceSection::DeviceSection() {
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mu);
  if (a.protect && a.open_depth++ == 0) mprotect(a.base, a.capacity, PROT_READ | PROT_WRITE);
}

DeviceSection::~DeviceSection() {
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mu);
  if (a.protect && --a.open_depth == 0) mprotect(a.base, a.capacity, PROT_NONE);
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

using namespace tb::emu;

extern "C" {

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

}  // extern "C"
