// N-API entry points. Everything here is thin: parse arguments, call the
// engine, convert the answer. Exceptions are converted by guarded().
#include <napi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "addon/convert.h"
#include "core/device_info.h"
#include "core/device_spec.h"
#include "core/threads.h"
#include "addon/loader_api.h"
#include "addon/trainer_wrap.h"
#include "cpu/gemm.h"
#include "cuda/cuda_parity.h"
#include "cuda/gemm_bench.h"
#include "nn/memory_budget.h"
#include "optim/loss_scaler.h"
#include "train/gradcheck.h"

namespace tb::addon {
namespace {

Napi::Value Version(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Napi::Env env = info.Env();
    Napi::Object o = Napi::Object::New(env);
    o.Set("version", TB_VERSION);
    o.Set("napiVersion", NAPI_VERSION);
    o.Set("cudaCompiled", cuda_status().compiled);
#ifdef TB_DEBUG_ENTRYPOINTS
    o.Set("debugEntryPoints", true);
#else
    o.Set("debugEntryPoints", false);
#endif
    return o;
  });
}

Napi::Value Devices(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Napi::Env env = info.Env();
    Napi::Object o = Napi::Object::New(env);
    o.Set("cpu", to_js(env, cpu_info()));
    o.Set("cuda", to_js(env, cuda_status()));
    return o;
  });
}

Napi::Value ResolveDevice(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsString()) {
      throw make_js_error(env, "E_BAD_INPUT", "resolveDevice(name) needs a string such as 'cpu' or 'cuda:0'", "");
    }
    const DeviceSpec spec = resolve_device(info[0].As<Napi::String>().Utf8Value());
    Napi::Object o = Napi::Object::New(env);
    o.Set("kind", spec.kind == DeviceKind::Cpu ? "cpu" : "cuda");
    o.Set("index", spec.index);
    return o;
  });
}

// gradcheck(op, seed) -> { op, shapes, maxRelError, checked }: finite differences in double.
Napi::Value Gradcheck(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[0].IsString() || !info[1].IsNumber()) {
      throw make_js_error(env, "E_BAD_INPUT", "gradcheck(op, seed) needs an op name and a numeric seed", "");
    }
    const GradcheckResult r = gradcheck(info[0].As<Napi::String>().Utf8Value(),
                                        static_cast<std::uint64_t>(info[1].As<Napi::Number>().Int64Value()));
    Napi::Object o = Napi::Object::New(env);
    o.Set("op", r.op);
    o.Set("shapes", r.shapes);
    o.Set("maxRelError", r.max_rel_error);
    o.Set("checked", static_cast<double>(r.checked));
    return o;
  });
}

Napi::Value GradcheckOps(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto ops = gradcheck_ops();
  Napi::Array a = Napi::Array::New(env, ops.size());
  for (size_t i = 0; i < ops.size(); ++i) a.Set(static_cast<uint32_t>(i), ops[i]);
  return a;
}

// benchGemm(M, N, K, reps, threads) -> { seconds (best of reps), kernel, lanes, threads }.
// For bench/cpu: times the engine's float GEMM on constant inputs, C = A . B.
Napi::Value BenchGemm(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Napi::Env env = info.Env();
    for (size_t i = 0; i < 5; ++i)
      if (info.Length() <= i || !info[i].IsNumber())
        throw make_js_error(env, "E_BAD_INPUT", "benchGemm(M, N, K, reps, threads) needs five numbers", "");
    const int M = info[0].As<Napi::Number>().Int32Value(), N = info[1].As<Napi::Number>().Int32Value(),
              K = info[2].As<Napi::Number>().Int32Value(), reps = info[3].As<Napi::Number>().Int32Value();
    if (M < 1 || N < 1 || K < 1 || reps < 1 || static_cast<double>(M) * N + static_cast<double>(M) * K + static_cast<double>(K) * N > 3e8)
      TB_THROW(ErrorCode::BadInput, "benchGemm sizes must be positive and fit in 1.2 GB");
    ThreadPool pool(info[4].As<Napi::Number>().Int32Value());
    std::vector<float> A(static_cast<size_t>(M) * K, 0.5f), B(static_cast<size_t>(K) * N, 0.25f), C(static_cast<size_t>(M) * N);
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      gemm(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, C.data(), N, &pool);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    Napi::Object o = Napi::Object::New(env);
    o.Set("seconds", best);
    o.Set("kernel", gemm_kernel_name());
    o.Set("lanes", gemm_kernel_lanes());
    o.Set("threads", pool.size());
    return o;
  });
}

// ---- Peak FP32 rate of this CPU, measured (for bench/cpu) ----
// A chain of dependent adds said 8 GHz on a 2.3 GHz CPU: the core can fold or
// overlap cheap integer adds, so counting them is not counting cycles. FMAs
// cannot be folded, and asm keeps the compiler from changing the work.
#if defined(__GNUC__) && defined(__x86_64__)
constexpr int kFmasPerIteration = 12;  // > latency (4-5) x FMA ports (2): enough to saturate them
constexpr int kRounds = 5;

// The accumulators start at 1 and each step adds 1 x 0, so values never change
// (no denormals, no overflow) and timing is data-independent.
#define TB_FMA_ITER(R, A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11)                                    \
  "vfmadd231ps %%" R "13, %%" R "12, %%" R A0 "\n\tvfmadd231ps %%" R "13, %%" R "12, %%" R A1 "\n\t"       \
  "vfmadd231ps %%" R "13, %%" R "12, %%" R A2 "\n\tvfmadd231ps %%" R "13, %%" R "12, %%" R A3 "\n\t"       \
  "vfmadd231ps %%" R "13, %%" R "12, %%" R A4 "\n\tvfmadd231ps %%" R "13, %%" R "12, %%" R A5 "\n\t"       \
  "vfmadd231ps %%" R "13, %%" R "12, %%" R A6 "\n\tvfmadd231ps %%" R "13, %%" R "12, %%" R A7 "\n\t"       \
  "vfmadd231ps %%" R "13, %%" R "12, %%" R A8 "\n\tvfmadd231ps %%" R "13, %%" R "12, %%" R A9 "\n\t"       \
  "vfmadd231ps %%" R "13, %%" R "12, %%" R A10 "\n\tvfmadd231ps %%" R "13, %%" R "12, %%" R A11 "\n\t"
#define TB_FMA_INDEPENDENT(R) TB_FMA_ITER(R, "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11")
#define TB_FMA_DEPENDENT(R) TB_FMA_ITER(R, "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0")
#define TB_FMA_LOOP(R, BODY)                                                                             \
  asm volatile("vbroadcastss %1, %%" R "12\n\tvbroadcastss %2, %%" R "13\n\t"                            \
               "vmovaps %%" R "12, %%" R "0\n\tvmovaps %%" R "12, %%" R "1\n\tvmovaps %%" R "12, %%" R "2\n\t" \
               "vmovaps %%" R "12, %%" R "3\n\tvmovaps %%" R "12, %%" R "4\n\tvmovaps %%" R "12, %%" R "5\n\t" \
               "vmovaps %%" R "12, %%" R "6\n\tvmovaps %%" R "12, %%" R "7\n\tvmovaps %%" R "12, %%" R "8\n\t" \
               "vmovaps %%" R "12, %%" R "9\n\tvmovaps %%" R "12, %%" R "10\n\tvmovaps %%" R "12, %%" R "11\n\t" \
               "1:\n\t" BODY "dec %0\n\tjnz 1b\n\tvzeroupper"                                            \
               : "+r"(iters)                                                                             \
               : "m"(kOne), "m"(kZero)                                                                   \
               : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",  \
                 "xmm11", "xmm12", "xmm13", "cc")

const float kOne = 1.0f, kZero = 0.0f;

__attribute__((target("avx512f"))) void fma_avx512(long iters, bool dependent) {
  if (dependent) TB_FMA_LOOP("zmm", TB_FMA_DEPENDENT("zmm"));
  else TB_FMA_LOOP("zmm", TB_FMA_INDEPENDENT("zmm"));
}

__attribute__((target("avx2,fma"))) void fma_avx2(long iters, bool dependent) {
  if (dependent) TB_FMA_LOOP("ymm", TB_FMA_DEPENDENT("ymm"));
  else TB_FMA_LOOP("ymm", TB_FMA_INDEPENDENT("ymm"));
}

struct FmaKernel {
  const char* isa;
  int lanes;
  void (*run)(long, bool);
};

// The widest FMA the CPU and OS support, or none (then bench/cpu uses the nominal clock).
bool widest_fma(FmaKernel& k) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) k = {"avx512", 16, fma_avx512};
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) k = {"avx2", 8, fma_avx2};
  else return false;
  return true;
}

using Clock = std::chrono::steady_clock;

// CPU time of the calling thread: time the scheduler gave this thread to other
// processes does not count, so the rate stays the core's own on a shared machine.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Runs `iters` loop iterations on every thread of the pool at once and returns
// each thread's FMA instructions per second of its own CPU time. Threads that
// share a core (SMT siblings) share its FMA units, so their rates halve and the
// sum stays the machine's rate.
std::vector<double> fma_rates_all_threads(ThreadPool& pool, const FmaKernel& k, long iters, bool dependent) {
  std::vector<double> rates(static_cast<size_t>(pool.size()));
  pool.parallel_for(pool.size(), [&](std::int64_t b, std::int64_t e, int) {
    for (std::int64_t t = b; t < e; ++t) {
      const double t0 = thread_cpu_seconds();
      k.run(iters, dependent);
      const double s = std::max(1e-9, thread_cpu_seconds() - t0);
      rates[static_cast<size_t>(t)] = static_cast<double>(iters) * kFmasPerIteration / s;
    }
  }, 1);
  return rates;
}
#endif

// measurePeak(threads) -> { isa, lanes, threads, gflops, perThreadGflops[], dependentFmaPerSec, chains, seconds }
// or null where no FMA kernel exists for this CPU. gflops: FP32 FLOP/s of
// `chains` independent FMA chains of the widest vector on every thread at once,
// best of kRounds, each thread timed by its own CPU time (so other processes on
// a shared machine do not lower it): an upper bound the GEMM can be compared with.
// dependentFmaPerSec: one chain per thread, each FMA waiting for the previous
// one, so it is clock / FMA latency (a sanity check on the clock).
Napi::Value MeasurePeak(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Napi::Env env = info.Env();
#if defined(__GNUC__) && defined(__x86_64__)
    FmaKernel k{};
    if (!widest_fma(k)) return env.Null();
    ThreadPool pool(info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 0);
    const auto start = Clock::now();
    // Calibrate on one thread so each round takes about 0.1 s of CPU time.
    const long probe = 200'000;
    const double c0 = thread_cpu_seconds();
    k.run(probe, false);
    const double probe_s = std::max(1e-6, thread_cpu_seconds() - c0);
    const long iters = std::max(probe, static_cast<long>(probe * 0.1 / probe_s));

    std::vector<double> best_per_thread;
    double best = 0;
    for (int round = 0; round < kRounds; ++round) {
      const std::vector<double> rates = fma_rates_all_threads(pool, k, iters, false);
      double sum = 0;
      for (double r : rates) sum += r;
      if (sum > best) {
        best = sum;
        best_per_thread = rates;
      }
    }
    // A dependent chain runs at 1/latency of the independent rate: far fewer iterations.
    const std::vector<double> dependent = fma_rates_all_threads(pool, k, std::max(1L, iters / 8), true);
    double dependent_mean = 0;
    for (double r : dependent) dependent_mean += r / static_cast<double>(dependent.size());

    const double flops_per_fma = 2.0 * k.lanes;
    Napi::Object o = Napi::Object::New(env);
    o.Set("isa", k.isa);
    o.Set("lanes", k.lanes);
    o.Set("threads", pool.size());
    o.Set("chains", kFmasPerIteration);
    o.Set("gflops", best * flops_per_fma / 1e9);
    Napi::Array per = Napi::Array::New(env, best_per_thread.size());
    for (size_t t = 0; t < best_per_thread.size(); ++t) per.Set(static_cast<uint32_t>(t), best_per_thread[t] * flops_per_fma / 1e9);
    o.Set("perThreadGflops", per);
    o.Set("dependentFmaPerSec", dependent_mean);
    o.Set("seconds", std::chrono::duration<double>(Clock::now() - start).count());
    return o;
#else
    return env.Null();
#endif
  });
}

// cudaParity(op, seed) -> { op, shapes, maxRelError, tolerance }: a kernel against the CPU backend.
Napi::Value CudaParity(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    if (info.Length() < 2 || !info[0].IsString() || !info[1].IsNumber())
      throw make_js_error(info.Env(), "E_BAD_INPUT", "cudaParity(op, seed) needs an op name and a seed", "");
    return to_js(info.Env(), cuda_parity(info[0].As<Napi::String>().Utf8Value(),
                                         static_cast<std::uint64_t>(info[1].As<Napi::Number>().Int64Value())));
  });
}

Napi::Value CudaParityOps(const Napi::CallbackInfo& info) {
  const auto ops = cuda_parity_ops();
  Napi::Array a = Napi::Array::New(info.Env(), ops.size());
  for (size_t i = 0; i < ops.size(); ++i) a.Set(static_cast<uint32_t>(i), ops[i]);
  return a;
}

Napi::Value CudaMemory(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value { return to_js(info.Env(), cuda_memory_stats()); });
}

// benchGemmCuda(M, N, K, precision, reps) -> own kernel vs cuBLASLt TFLOP/s and the device's theoretical peak.
// Bytes the CPU backend's training buffers hold now, all trainers together: back at its
// baseline after every run, failed ones included (the batch-size search checks it after each OOM).
Napi::Value EngineMemory(const Napi::CallbackInfo& info) {
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("chargedBytes", Napi::Number::New(info.Env(), static_cast<double>(engine_charged_bytes())));
  return o;
}

Napi::Value BenchGemmCuda(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    if (info.Length() < 5 || !info[3].IsString())
      throw make_js_error(info.Env(), "E_BAD_INPUT", "benchGemmCuda(M, N, K, precision, reps) needs three sizes, a precision and a count", "");
    auto num = [&](int i) { return info[static_cast<size_t>(i)].As<Napi::Number>().Int32Value(); };
    return to_js(info.Env(), bench_gemm_cuda(num(0), num(1), num(2), info[3].As<Napi::String>().Utf8Value(), num(4)));
  });
}

Napi::Value CublasLtStatus(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value { return to_js(info.Env(), cublaslt_status()); });
}

// lossScaleSchedule(foundNonfinite[], growthInterval) -> [{ scale, applied }]: the fp16 loss-scale rule the
// CUDA step runs on the device (optim/loss_scaler.h), replayed on the host so it is tested everywhere.
Napi::Value LossScaleSchedule(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    if (info.Length() < 2 || !info[0].IsArray() || !info[1].IsNumber())
      throw make_js_error(info.Env(), "E_BAD_INPUT", "lossScaleSchedule(found[], growthInterval) needs an array and a number", "");
    const Napi::Array found = info[0].As<Napi::Array>();
    LossScalePolicy policy;
    policy.growth_interval = std::max(1, info[1].As<Napi::Number>().Int32Value());
    LossScale scale;
    Json out = Json::array();
    for (uint32_t i = 0; i < found.Length(); ++i) {
      const bool applied = update_loss_scale(scale, found.Get(i).ToBoolean().Value(), policy);
      Json step = Json::object();
      step.set("scale", static_cast<double>(scale.scale));
      step.set("applied", applied);
      out.push(step);
    }
    return to_js(info.Env(), out);
  });
}

#ifdef TB_DEBUG_ENTRYPOINTS
// Deliberately kills the process, as a native bug would. Used only by the
// crash-isolation test; the engine host refuses to call it unless started in
// debug mode.
Napi::Value DebugAbort(const Napi::CallbackInfo&) {
  std::abort();
}
#endif

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("version", Napi::Function::New(env, Version, "version"));
  exports.Set("devices", Napi::Function::New(env, Devices, "devices"));
  exports.Set("resolveDevice", Napi::Function::New(env, ResolveDevice, "resolveDevice"));
  exports.Set("gradcheck", Napi::Function::New(env, Gradcheck, "gradcheck"));
  exports.Set("gradcheckOps", Napi::Function::New(env, GradcheckOps, "gradcheckOps"));
  exports.Set("modelInfo", Napi::Function::New(env, ModelInfo, "modelInfo"));
  exports.Set("benchGemm", Napi::Function::New(env, BenchGemm, "benchGemm"));
  exports.Set("measurePeak", Napi::Function::New(env, MeasurePeak, "measurePeak"));
  exports.Set("cudaParity", Napi::Function::New(env, CudaParity, "cudaParity"));
  exports.Set("cudaParityOps", Napi::Function::New(env, CudaParityOps, "cudaParityOps"));
  exports.Set("cudaMemory", Napi::Function::New(env, CudaMemory, "cudaMemory"));
  exports.Set("engineMemory", Napi::Function::New(env, EngineMemory, "engineMemory"));
  exports.Set("benchGemmCuda", Napi::Function::New(env, BenchGemmCuda, "benchGemmCuda"));
  exports.Set("cublasLt", Napi::Function::New(env, CublasLtStatus, "cublasLt"));
  exports.Set("lossScaleSchedule", Napi::Function::New(env, LossScaleSchedule, "lossScaleSchedule"));
  exports.Set("Trainer", TrainerWrap::Define(env));
  exports.Set("sourceInfo", Napi::Function::New(env, SourceInfo, "sourceInfo"));
  exports.Set("runLoader", Napi::Function::New(env, RunLoader, "runLoader"));
  exports.Set("benchLoader", Napi::Function::New(env, BenchLoader, "benchLoader"));
  exports.Set("sequentialRead", Napi::Function::New(env, SequentialRead, "sequentialRead"));
  exports.Set("benchH2dCopy", Napi::Function::New(env, BenchH2dCopy, "benchH2dCopy"));
#ifdef TB_DEBUG_ENTRYPOINTS
  exports.Set("debugAbort", Napi::Function::New(env, DebugAbort, "debugAbort"));
#endif
  return exports;
}

}  // namespace
}  // namespace tb::addon

// NODE_API_MODULE pastes the name into an identifier, so it must be unqualified.
static Napi::Object InitTrainbench(Napi::Env env, Napi::Object exports) { return tb::addon::Init(env, exports); }

NODE_API_MODULE(trainbench_native, InitTrainbench)
