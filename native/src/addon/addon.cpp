// N-API entry points. Everything here is thin: parse arguments, call the
// engine, convert the answer. Exceptions are converted by guarded().
#include <napi.h>

#include <cstdlib>

#include "addon/convert.h"
#include "core/device_info.h"
#include "core/device_spec.h"

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
