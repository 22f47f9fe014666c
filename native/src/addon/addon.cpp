// N-API entry points. Everything here is thin: parse arguments, call the
// engine, convert the answer. Exceptions are converted by guarded().
#include <napi.h>

#include <cstdlib>

#include "addon/convert.h"
#include "core/device_info.h"
#include "core/device_spec.h"
#include "addon/trainer_wrap.h"
#include "cpu/gemm.h"
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
  exports.Set("Trainer", TrainerWrap::Define(env));
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
