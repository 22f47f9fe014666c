// The emulated device's own rules, each against a small kernel or call that breaks
// it (docs/adr/0023-emulated-cuda.md): what the scheduler must catch, what the
// runtime must refuse, and the races its lazy streams must expose. Compiled like
// the engine's .cu files (g++, cuda_emu.h) by the emulated build.
//   tb_emu_rules [check]    no argument: every check; exit 1 when one fails
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cuda/cuda_check.h"

namespace {

bool expect(bool ok, const std::string& what) {
  std::printf("  %s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  return ok;
}

/** The error the next synchronisation reports, with the emulator's words for it. */
std::string sync_error() {
  const cudaError_t e = cudaDeviceSynchronize();
  return e == cudaSuccess ? "" : std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

__global__ void divergent_barrier_k(int* out) {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}

__global__ void exited_before_barrier_k(int* out, int n) {
  if (static_cast<int>(threadIdx.x) >= n) return;
  out[threadIdx.x] = 1;
  __syncthreads();
}

__global__ void partial_shuffle_k(float* out) {
  float v = static_cast<float>(threadIdx.x);
  if (threadIdx.x % 32 != 5) v += __shfl_down_sync(0xffffffffu, v, 1);
  out[threadIdx.x] = v;
}

__global__ void shuffle_sum_k(float* out) {
  float v = static_cast<float>(threadIdx.x);
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) out[threadIdx.x / 32] = v;
}

// Thread 0 reads what thread 1 wrote, with no barrier between: the order decides what it sees.
__global__ void missing_barrier_k(int* out) {
  __shared__ int slot[2];
  slot[threadIdx.x] = static_cast<int>(threadIdx.x) + 10;
  if (threadIdx.x == 0) out[0] = slot[1];
}

// Thread 0 waits for a flag thread 1 sets only after a barrier thread 0 never reaches: a deadlock
// on a GPU too. Emulated, thread 0's fiber spins and never yields; the watchdog must end it.
__global__ void spin_k(int* out) {
  __shared__ volatile int flag;
  if (threadIdx.x == 0) flag = 0;
  __syncthreads();
  if (threadIdx.x == 0) {
    while (flag == 0) {
    }
  } else {
    __syncthreads();
    flag = 1;
  }
  out[threadIdx.x] = 1;
}

__global__ void copy_k(float* out, const float* in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

bool divergent_barrier() {
  int* d = nullptr;
  TB_CUDA_CHECK(cudaMalloc(&d, 64 * sizeof(int)));
  TB_LAUNCH(divergent_barrier_k, 1, 32, 0, nullptr)(d);
  const std::string e = sync_error();
  cudaFree(d);
  return expect(e.find("divergent __syncthreads") != std::string::npos && e.find("emu_rules.cu:") != std::string::npos, "threads at two barrier sites are reported with both sites: " + e);
}

bool exited_before_barrier() {
  int* d = nullptr;
  TB_CUDA_CHECK(cudaMalloc(&d, 64 * sizeof(int)));
  TB_LAUNCH(exited_before_barrier_k, 1, 64, 0, nullptr)(d, 40);
  const std::string e = sync_error();
  cudaFree(d);
  return expect(e.find("after some threads of the block exited") != std::string::npos && e.find("exited: threads 40-63") != std::string::npos,
                "a barrier after threads returned early names them: " + e);
}

bool partial_shuffle() {
  float* d = nullptr;
  TB_CUDA_CHECK(cudaMalloc(&d, 64 * sizeof(float)));
  TB_LAUNCH(partial_shuffle_k, 1, 32, 0, nullptr)(d);
  const std::string e = sync_error();
  cudaFree(d);
  return expect(e.find("deadlock") != std::string::npos || e.find("exited before reaching it") != std::string::npos,
                "a shuffle one lane of its mask skips is reported: " + e);
}

bool shuffle_values() {
  float* d = nullptr;
  TB_CUDA_CHECK(cudaMalloc(&d, 2 * sizeof(float)));
  TB_LAUNCH(shuffle_sum_k, 1, 64, 0, nullptr)(d);
  float h[2] = {};
  TB_CUDA_CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  cudaFree(d);
  // Lanes 0..31 sum to 496; the second warp's lanes 32..63 to 1520.
  return expect(h[0] == 496.f && h[1] == 1520.f, "a shuffle-down tree sums each warp as the device does (" + std::to_string(h[0]) + ", " + std::to_string(h[1]) + ")");
}

bool missing_barrier_depends_on_order() {
  int* d = nullptr;
  TB_CUDA_CHECK(cudaMalloc(&d, sizeof(int)));
  TB_CUDA_CHECK(cudaMemset(d, 0, sizeof(int)));
  TB_LAUNCH(missing_barrier_k, 1, 2, 0, nullptr)(d);
  int h = -1;
  TB_CUDA_CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
  cudaFree(d);
  const char* order = std::getenv("TB_EMU_ORDER");
  const std::string o = order ? order : "forward";
  // Forward: thread 0 runs first and reads a slot thread 1 has not written; reverse: it has; random: either.
  const bool as_ordered = o == "reverse" ? h == 11 : o == "forward" ? h != 11 : true;
  return expect(as_ordered, "a read of another thread's shared write without a barrier sees what the order gives (" + std::to_string(h) + ")");
}

bool bad_geometry() {
  int* d = nullptr;
  TB_CUDA_CHECK(cudaMalloc(&d, sizeof(int)));
  TB_LAUNCH(divergent_barrier_k, 1, 2048, 0, nullptr)(d);
  const cudaError_t e = cudaGetLastError();
  cudaFree(d);
  return expect(e == cudaErrorInvalidConfiguration && cudaGetLastError() == cudaSuccess, "a block of 2048 threads is cudaErrorInvalidConfiguration at the launch");
}

bool host_pointer_argument() {
  std::vector<int> host(64);
  TB_LAUNCH(divergent_barrier_k, 1, 32, 0, nullptr)(host.data());
  const cudaError_t e = cudaGetLastError();
  return expect(e == cudaErrorIllegalAddress && std::string(cudaGetErrorString(e)).find("host pointer as argument 0") != std::string::npos,
                std::string("a kernel given a host pointer is refused: ") + cudaGetErrorString(e));
}

bool out_of_memory() {
  size_t free_bytes = 0, total = 0;
  TB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, total + 1);
  void* q = nullptr;
  const bool after = cudaMalloc(&q, 1024) == cudaSuccess;
  cudaFree(q);
  return expect(e == cudaErrorMemoryAllocation && p == nullptr && after, "an allocation over the device's capacity fails as out of memory, and the next one works");
}

bool lazy_pinned_copy() {
  // A pinned staging buffer rewritten before its asynchronous copy ran: the copy takes the new value,
  // as a GPU may (the engine must order its rewrites after the copy's event). Pageable memory is staged at the call.
  cudaStream_t s;
  TB_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float* pinned = nullptr;
  TB_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&pinned), sizeof(float), cudaHostAllocPortable));
  float pageable = 1.f;
  float *a = nullptr, *b = nullptr;
  TB_CUDA_CHECK(cudaMalloc(&a, sizeof(float)));
  TB_CUDA_CHECK(cudaMalloc(&b, sizeof(float)));
  *pinned = 1.f;
  TB_CUDA_CHECK(cudaMemcpyAsync(a, pinned, sizeof(float), cudaMemcpyHostToDevice, s));
  TB_CUDA_CHECK(cudaMemcpyAsync(b, &pageable, sizeof(float), cudaMemcpyHostToDevice, s));
  *pinned = 2.f;
  pageable = 2.f;
  cudaEvent_t done;
  TB_CUDA_CHECK(cudaEventCreate(&done));
  TB_CUDA_CHECK(cudaEventRecord(done, s));
  const bool pending = cudaEventQuery(done) == cudaErrorNotReady;
  TB_CUDA_CHECK(cudaStreamSynchronize(s));
  const bool complete = cudaEventQuery(done) == cudaSuccess;
  float ha = 0, hb = 0;
  TB_CUDA_CHECK(cudaMemcpy(&ha, a, sizeof ha, cudaMemcpyDeviceToHost));
  TB_CUDA_CHECK(cudaMemcpy(&hb, b, sizeof hb, cudaMemcpyDeviceToHost));
  cudaEventDestroy(done);
  cudaFree(a);
  cudaFree(b);
  cudaFreeHost(pinned);
  cudaStreamDestroy(s);
  return expect(pending && complete && ha == 2.f && hb == 1.f,
                "queued work runs when waited for: the event is NotReady before, the pinned copy reads the rewritten buffer (" + std::to_string(ha) +
                    "), the pageable one what it held at the call (" + std::to_string(hb) + ")");
}

bool capture_rules() {
  cudaStream_t s;
  TB_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *in = nullptr, *out = nullptr;
  TB_CUDA_CHECK(cudaMalloc(&in, 256 * sizeof(float)));
  TB_CUDA_CHECK(cudaMalloc(&out, 256 * sizeof(float)));
  std::vector<float> h(256, 3.f);
  TB_CUDA_CHECK(cudaMemcpy(in, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
  bool ok = true;
  // A capture that synchronises its stream is invalidated, and so is its end.
  TB_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  ok &= expect(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported, "synchronising a captured stream is cudaErrorStreamCaptureUnsupported");
  cudaGraph_t g = nullptr;
  ok &= expect(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated && g == nullptr, "...and its end is cudaErrorStreamCaptureInvalidated, with no graph");
  cudaGetLastError();
  // A clean capture records nodes (nothing runs) and replays them with the arguments they were captured with.
  TB_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  TB_CUDA_CHECK(cudaMemsetAsync(out, 0, 256 * sizeof(float), s));
  TB_LAUNCH(copy_k, 1, 256, 0, s)(out, in, 256);
  void* p = nullptr;
  ok &= expect(cudaMalloc(&p, 64) == cudaErrorStreamCaptureUnsupported, "cudaMalloc during a capture is refused (an unsafe call)");
  ok &= expect(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated, "...which invalidates the capture");
  cudaGetLastError();
  TB_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  TB_CUDA_CHECK(cudaMemsetAsync(out, 0, 256 * sizeof(float), s));
  TB_LAUNCH(copy_k, 1, 256, 0, s)(out, in, 256);
  TB_CUDA_CHECK(cudaStreamEndCapture(s, &g));
  size_t n = 0;
  TB_CUDA_CHECK(cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  TB_CUDA_CHECK(cudaGraphGetNodes(g, nodes.data(), &n));
  std::map<int, int> kinds;
  for (auto node : nodes) {
    cudaGraphNodeType t;
    TB_CUDA_CHECK(cudaGraphNodeGetType(node, &t));
    ++kinds[static_cast<int>(t)];
  }
  ok &= expect(n == 2 && kinds[cudaGraphNodeTypeMemset] == 1 && kinds[cudaGraphNodeTypeKernel] == 1, "the graph holds a memset node and a kernel node");
  float first = -1;
  TB_CUDA_CHECK(cudaMemcpy(&first, out, sizeof first, cudaMemcpyDeviceToHost));
  ok &= expect(first != 3.f, "capturing ran nothing");
  cudaGraphExec_t exec;
  TB_CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
  TB_CUDA_CHECK(cudaGraphLaunch(exec, s));
  TB_CUDA_CHECK(cudaStreamSynchronize(s));
  TB_CUDA_CHECK(cudaMemcpy(&first, out + 255, sizeof first, cudaMemcpyDeviceToHost));
  ok &= expect(first == 3.f, "a replay runs the captured kernel");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaFree(in);
  cudaFree(out);
  cudaStreamDestroy(s);
  return ok;
}

bool host_reads_device_memory() {
  // In a child process: the read faults, and the emulator says why, as a GPU's host would crash.
  int* d = nullptr;
  TB_CUDA_CHECK(cudaMalloc(&d, sizeof(int)));
  int fds[2];
  if (pipe(fds) != 0) return expect(false, "pipe");
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    volatile int v = *d;  // host code dereferencing a device pointer
    std::printf("%d\n", v);
    _exit(0);
  }
  close(fds[1]);
  char buf[512] = {};
  const ssize_t got = read(fds[0], buf, sizeof buf - 1);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  cudaFree(d);
  return expect(got > 0 && WIFSIGNALED(status) && std::strstr(buf, "host code dereferenced device memory"),
                std::string("host code that dereferences device memory ends with the emulator's reason: ") + (got > 0 ? std::string(buf, static_cast<size_t>(got)) : "(nothing)"));
}

bool spinning_kernel() {
  // In a fresh process (its own watchdog, a 1 s limit): the run must end, naming where threads wait
  // (thread 1 at its barrier, or yet to run when the order put thread 0 first).
  int fds[2];
  if (pipe(fds) != 0) return expect(false, "pipe");
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    setenv("TB_EMU_KERNEL_TIMEOUT_S", "1", 1);
    execl("/proc/self/exe", "tb_emu_rules", "--spin", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  std::string err;
  char buf[512];
  for (ssize_t got; (got = read(fds[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<size_t>(got));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return expect(WIFEXITED(status) && WEXITSTATUS(status) == 70 && err.find("spin_k") != std::string::npos &&
                    err.find("running, never back at a barrier or collective: threads 0") != std::string::npos &&
                    (err.find("__syncthreads at emu_rules.cu:") != std::string::npos || err.find("yet to run: threads 1") != std::string::npos),
                "a kernel that never ends is ended by the watchdog with where its threads wait: " + err);
}

void spin() {
  int* d = nullptr;
  TB_CUDA_CHECK(cudaMalloc(&d, 2 * sizeof(int)));
  TB_LAUNCH(spin_k, 1, 2, 0, nullptr)(d);
  cudaDeviceSynchronize();
  std::fprintf(stderr, "spin_k ended: the watchdog did not\n");
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::pair<std::string, std::function<bool()>>> checks = {
      {"divergent-barrier", divergent_barrier},   {"exited-before-barrier", exited_before_barrier},
      {"partial-shuffle", partial_shuffle},       {"shuffle-values", shuffle_values},
      {"missing-barrier-order", missing_barrier_depends_on_order},
      {"bad-geometry", bad_geometry},             {"host-pointer-argument", host_pointer_argument},
      {"out-of-memory", out_of_memory},           {"lazy-pinned-copy", lazy_pinned_copy},
      {"capture-rules", capture_rules},           {"host-reads-device-memory", host_reads_device_memory},
      {"spinning-kernel", spinning_kernel},
  };
  if (argc > 1 && std::string(argv[1]) == "--spin") {
    spin();
    return 0;
  }
  int failed = 0, ran = 0;
  for (const auto& [name, check] : checks) {
    if (argc > 1 && name != argv[1]) continue;
    std::printf("%s\n", name.c_str());
    ++ran;
    failed += !check();
  }
  std::printf("%s: %d of %d rule checks failed\n", failed ? "FAILED" : "passed", failed, ran);
  return failed || ran == 0 ? 1 : 0;
}
