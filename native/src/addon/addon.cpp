// N-API entry points. Everything here is thin: parse arguments, call the
// engine, convert the answer. Exceptions are converted by guarded().
#include <napi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
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

// measureClock(threads) -> GHz, or null where not supported. Runs a chain of
// dependent integer adds (one cycle each) on every thread at once, so the
// answer is the all-core clock under load, which /proc/cpuinfo does not give
// inside a VM. Used for peak-FLOP estimates in bench/cpu.
Napi::Value MeasureClock(const Napi::CallbackInfo& info) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__aarch64__))
  ThreadPool pool(info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 0);
  std::vector<double> ghz(static_cast<size_t>(pool.size()));
  pool.parallel_for(pool.size(), [&](std::int64_t b, std::int64_t e, int) {
    for (std::int64_t t = b; t < e; ++t) {
      const long iters = 50'000'000;
      unsigned long x = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (long i = 0; i < iters; ++i) {
#if defined(__x86_64__)
        asm volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
                     "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
                     : "+r"(x));
#else
        asm volatile("add %0, %0, #1\n\tadd %0, %0, #1\n\tadd %0, %0, #1\n\tadd %0, %0, #1\n\tadd %0, %0, #1\n\t"
                     "add %0, %0, #1\n\tadd %0, %0, #1\n\tadd %0, %0, #1\n\tadd %0, %0, #1\n\tadd %0, %0, #1"
                     : "+r"(x));
#endif
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      ghz[static_cast<size_t>(t)] = 10.0 * iters / s / 1e9;
    }
  }, 1);
  double sum = 0;
  for (double g : ghz) sum += g;
  return Napi::Number::New(info.Env(), sum / ghz.size());
#else
  return info.Env().Null();
#endif
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
  exports.Set("measureClock", Napi::Function::New(env, MeasureClock, "measureClock"));
  exports.Set("cudaParity", Napi::Function::New(env, CudaParity, "cudaParity"));
  exports.Set("cudaParityOps", Napi::Function::New(env, CudaParityOps, "cudaParityOps"));
  exports.Set("cudaMemory", Napi::Function::New(env, CudaMemory, "cudaMemory"));
  exports.Set("benchGemmCuda", Napi::Function::New(env, BenchGemmCuda, "benchGemmCuda"));
  exports.Set("cublasLt", Napi::Function::New(env, CublasLtStatus, "cublasLt"));
  exports.Set("lossScaleSchedule", Napi::Function::New(env, LossScaleSchedule, "lossScaleSchedule"));
  exports.Set("Trainer", TrainerWrap::Define(env));
  exports.Set("sourceInfo", Napi::Function::New(env, SourceInfo, "sourceInfo"));
  exports.Set("runLoader", Napi::Function::New(env, RunLoader, "runLoader"));
  exports.Set("benchLoader", Napi::Function::New(env, BenchLoader, "benchLoader"));
  exports.Set("sequentialRead", Napi::Function::New(env, SequentialRead, "sequentialRead"));
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
