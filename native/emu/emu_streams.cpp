// The emulated device's runtime, part 3: streams that run lazily, kernel launches, events, host
// functions and graph capture (emu_internal.h has what the parts share).
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "emu_internal.h"

namespace tb::emu {

struct Graph : CUgraph_st {};

std::mutex g_mu;
std::recursive_mutex g_device;
std::set<CUstream_st*> g_streams;

namespace {
thread_local std::set<CUstream_st*> t_running;
CUstream_st g_legacy;
}  // namespace

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

namespace {

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

}  // namespace
}  // namespace tb::emu

using namespace tb::emu;

extern "C" {

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


cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  if (!event) return fail(cudaErrorInvalidResourceHandle);
  CUstream_st* waited = event->stream;
  const std::uint64_t seq = event->seq;
  auto progress = event->progress;
  if (!event->recorded || !waited) return cudaSuccess;  // an event never recorded is complete (Runtime API, cudaStreamWaitEvent)
  return submit(stream, Op{[waited, progress, seq] { wait_for(waited, progress, seq); }, cudaGraphNodeTypeWaitEvent});
}

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
