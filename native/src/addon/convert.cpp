#include "addon/convert.h"

namespace tb::addon {

Napi::Object to_js(Napi::Env env, const CpuInfo& cpu) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("name", cpu.name);
  o.Set("arch", cpu.arch);
  o.Set("logicalCores", cpu.logical_cores);
  Napi::Array simd = Napi::Array::New(env, cpu.simd.size());
  for (size_t i = 0; i < cpu.simd.size(); ++i) simd.Set(static_cast<uint32_t>(i), cpu.simd[i]);
  o.Set("simd", simd);
  return o;
}

Napi::Object to_js(Napi::Env env, const CudaStatus& cuda) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("compiled", cuda.compiled);
  o.Set("emulated", cuda.emulated);
  o.Set("available", cuda.available);
  o.Set("reason", cuda.reason.empty() ? env.Null() : Napi::String::New(env, cuda.reason));
  o.Set("driverVersion", cuda.driver_version);
  o.Set("runtimeVersion", cuda.runtime_version);
  Napi::Array devices = Napi::Array::New(env, cuda.devices.size());
  for (size_t i = 0; i < cuda.devices.size(); ++i) {
    const CudaDeviceInfo& d = cuda.devices[i];
    Napi::Object dev = Napi::Object::New(env);
    dev.Set("index", d.index);
    dev.Set("name", d.name);
    // Memory sizes exceed 2^31 but stay far below 2^53, so a double is exact.
    dev.Set("totalMemoryBytes", static_cast<double>(d.total_memory_bytes));
    dev.Set("computeCapability", std::to_string(d.compute_major) + "." + std::to_string(d.compute_minor));
    dev.Set("multiprocessors", d.multiprocessors);
    dev.Set("pciBusId", d.pci_bus_id);
    devices.Set(static_cast<uint32_t>(i), dev);
  }
  o.Set("devices", devices);
  return o;
}

Napi::Value to_js(Napi::Env env, const Json& json) {
  switch (json.type()) {
    case Json::Type::Null: return env.Null();
    case Json::Type::Bool: return Napi::Boolean::New(env, json.boolean());
    case Json::Type::Number: return Napi::Number::New(env, json.number());
    case Json::Type::String: return Napi::String::New(env, json.string());
    case Json::Type::Array: {
      Napi::Array a = Napi::Array::New(env, json.items().size());
      for (size_t i = 0; i < json.items().size(); ++i) a.Set(static_cast<uint32_t>(i), to_js(env, json.items()[i]));
      return a;
    }
    case Json::Type::Object: {
      Napi::Object o = Napi::Object::New(env);
      for (const auto& kv : json.members()) o.Set(kv.first, to_js(env, kv.second));
      return o;
    }
  }
  return env.Undefined();
}

Json json_arg(const Napi::CallbackInfo& info, size_t index, const char* what) {
  if (info.Length() <= index || !info[index].IsString()) {
    throw make_js_error(info.Env(), "E_BAD_INPUT", std::string(what) + " must be passed as a JSON string", "");
  }
  return Json::parse(info[index].As<Napi::String>().Utf8Value());
}

Napi::Error make_js_error(Napi::Env env, const char* code, const std::string& message, const std::string& where) {
  Napi::Error err = Napi::Error::New(env, message);
  err.Set("code", code);
  if (!where.empty()) err.Set("where", where);
  return err;
}

}  // namespace tb::addon
