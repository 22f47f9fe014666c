// Conversions between engine structs and JS values, and the one place where
// C++ exceptions become JS errors with a stable `code`.
#pragma once
#include <napi.h>

#include <exception>
#include <new>

#include "core/device_info.h"
#include "core/json.h"
#include "core/errors.h"

namespace tb::addon {

Napi::Object to_js(Napi::Env env, const CpuInfo& cpu);
Napi::Object to_js(Napi::Env env, const CudaStatus& cuda);
Napi::Value to_js(Napi::Env env, const Json& json);
// Parses a JS string argument as JSON; E_BAD_INPUT names the argument when it is not a string.
Json json_arg(const Napi::CallbackInfo& info, size_t index, const char* what);

Napi::Error make_js_error(Napi::Env env, const char* code, const std::string& message, const std::string& where);

// Runs `body` and converts any C++ exception into a thrown JS Error.
template <typename Body>
Napi::Value guarded(const Napi::CallbackInfo& info, Body body) {
  Napi::Env env = info.Env();
  try {
    return body(info);
  } catch (const Napi::Error&) {
    throw;
  } catch (const Error& e) {
    throw make_js_error(env, error_code_name(e.code()), e.what(), e.where());
  } catch (const std::bad_alloc&) {
    throw make_js_error(env, "E_OOM", "host memory allocation failed", "");
  } catch (const std::exception& e) {
    throw make_js_error(env, "E_INTERNAL", e.what(), "");
  }
}

}  // namespace tb::addon
