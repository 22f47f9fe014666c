// What the emulated runtime's files share (emu_device.cpp, emu_memory.cpp, emu_streams.cpp):
// the error state, device memory and the stream machinery. Each rule modelled cites the part of
// the CUDA documentation it follows ("Programming Guide" is the CUDA C++ Programming Guide,
// "Runtime API" the CUDA Runtime API reference, both for CUDA 13); the emulator encodes our
// reading of them, and a real GPU stays the authority (docs/adr/0023-emulated-cuda.md).
#pragma once
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "emu_runtime.h"

namespace tb::emu {

using Clock = std::chrono::steady_clock;

// ---- errors (emu_device.cpp)
/** Sets this host thread's last error (and the emulator's words for it); returns e. */
cudaError_t fail(cudaError_t e, std::string detail = {});
/** A failure of work that ran asynchronously (a kernel), reported by the next wait. */
void async_fail(cudaError_t e, const std::string& detail);
/** After a wait: the error of work that ran meanwhile, once. */
cudaError_t take_async();

// ---- device memory (emu_memory.cpp)
/** Kernels and copies touch device memory inside one of these; host code never does. */
struct DeviceSection {
  DeviceSection();
  ~DeviceSection();
  DeviceSection(const DeviceSection&) = delete;
  DeviceSection& operator=(const DeviceSection&) = delete;
};
/** Whether p lies in memory cudaHostAlloc returned. */
bool is_pinned(const void* p);
/** The device's capacity in bytes. */
std::size_t device_capacity();

// ---- streams (emu_streams.cpp)
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

extern std::mutex g_mu;  // guards every queue and capture state
// One thread runs device work at a time, as one device would (kernels' __shared__ memory is one copy
// per process); re-entered when an op waits for another stream, which then runs on the same thread.
extern std::recursive_mutex g_device;
extern std::set<CUstream_st*> g_streams;

/** The stream a handle names (null and cudaStreamLegacy: the legacy default stream). */
CUstream_st* real(cudaStream_t s);
bool is_legacy(CUstream_st* s);
/** Runs the stream's work up to (not past) position `upto`; flush_all runs all of it. */
void flush(CUstream_st* s, std::uint64_t upto);
void flush_all(CUstream_st* s);
/** The legacy default stream waits for all blocking streams (Programming Guide, "Default Stream"). */
void flush_blocking_streams();
/** Whether a capture under way forbids a potentially unsafe call (and invalidates it). */
bool unsafe_under_capture();
/** Queues work on a stream (or records it into the stream's capture), or runs it at once on the legacy stream. */
cudaError_t submit(cudaStream_t stream, Op op);
/** Runs a change in the stream's order (see emu_streams.cpp). */
void in_stream_order(cudaStream_t stream, std::function<void()> change, const std::function<void()>& captured);

}  // namespace tb::emu
