#include "addon/loader_api.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>

#include "addon/convert.h"
#include "addon/trainer_wrap.h"
#include "cuda/copy_bench.h"
#include "cuda/device_loader_bench.h"
#include "data/loader_bench.h"
#include "core/device_spec.h"
#include "data/open_source.h"

namespace tb::addon {
namespace {

LoaderOptions loader_options(const Json& j) {
  LoaderOptions o;
  auto num = [&](const char* key, double fallback) {
    const Json* v = j.find(key);
    return v && v->is_number() ? v->number() : fallback;
  };
  o.batch_size = static_cast<int>(num("batchSize", 64));
  o.workers = static_cast<int>(num("workers", 1));
  o.prefetch = static_cast<int>(num("prefetch", 2));
  o.seed = static_cast<std::uint64_t>(num("seed", 0));
  o.sample_ratio = num("sampleRatio", 1.0);
  if (const Json* v = j.find("shuffle")) o.shuffle = v->is_bool() ? v->boolean() : true;
  if (const Json* v = j.find("dropLast")) o.drop_last = v->is_bool() ? v->boolean() : true;
  if (const Json* v = j.find("fields"))
    for (const auto& f : v->items()) o.fields.push_back(f.string());
  return o;
}

// Runs a job on a libuv worker thread and settles a promise with its JSON result.
class JsonJob : public Napi::AsyncWorker {
 public:
  JsonJob(Napi::Env env, std::function<Json()> job)
      : Napi::AsyncWorker(env, "trainbench.loader"), job_(std::move(job)), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute() override {
    try {
      result_ = job_();
    } catch (const Error& e) {
      code_ = error_code_name(e.code());
      SetError(e.what());
    } catch (const std::exception& e) {
      code_ = "E_INTERNAL";
      SetError(e.what());
    }
  }
  void OnOK() override { deferred_.Resolve(to_js(Env(), result_)); }
  void OnError(const Napi::Error& e) override {
    deferred_.Reject(make_js_error(Env(), code_.c_str(), e.Message(), "").Value());
  }

 private:
  std::function<Json()> job_;
  Napi::Promise::Deferred deferred_;
  Json result_;
  std::string code_ = "E_INTERNAL";
};

}  // namespace

Napi::Value SourceInfo(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    return to_js(info.Env(), source_info_json(*open_source(json_arg(info, 0, "the source"))));
  });
}

Napi::Value RunLoader(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Napi::Env env = info.Env();
    auto source = open_source(json_arg(info, 0, "the source"));
    const LoaderOptions options = loader_options(json_arg(info, 1, "the loader options"));
    const int epochs = info.Length() > 2 && info[2].IsNumber() ? info[2].As<Napi::Number>().Int32Value() : 1;
    // abandonAfter: even epochs stop after this many batches, with workers mid-flight (restart path).
    const Json opts = json_arg(info, 1, "the loader options");
    const Json* abandon = opts.find("abandonAfter");
    const std::int64_t abandon_after = abandon && abandon->is_number() ? static_cast<std::int64_t>(abandon->number()) : -1;
    Loader loader(source, options);
    Napi::Array orders = Napi::Array::New(env);
    std::vector<std::vector<std::uint8_t>> first(options.fields.empty() ? source->fields().size() : options.fields.size());
    for (int e = 0; e < epochs; ++e) {
      std::vector<double> order;
      loader.start_epoch(e);
      std::int64_t taken = 0;
      while (const Batch* b = loader.next()) {
        if (abandon_after >= 0 && e % 2 == 0 && taken++ >= abandon_after) break;
        for (std::int64_t r : b->records) order.push_back(static_cast<double>(r));
        if (e == 0)
          for (size_t f = 0; f < b->data.size(); ++f) {
            const std::int64_t n = b->size * loader.loaded_field(static_cast<int>(f)).record_bytes();
            first[f].insert(first[f].end(), b->data[f].data(), b->data[f].data() + n);
          }
      }
      Napi::Float64Array a = Napi::Float64Array::New(env, order.size());
      std::memcpy(a.Data(), order.data(), order.size() * sizeof(double));
      orders.Set(static_cast<uint32_t>(e), a);
    }
    Napi::Object fields = Napi::Object::New(env);
    for (size_t f = 0; f < first.size(); ++f) {
      Napi::Buffer<std::uint8_t> buf = Napi::Buffer<std::uint8_t>::Copy(env, first[f].data(), first[f].size());
      fields.Set(loader.loaded_field(static_cast<int>(f)).name, buf);
    }
    Napi::Object out = Napi::Object::New(env);
    out.Set("epochs", orders);
    out.Set("fields", fields);
    return out;
  });
}

Napi::Value BenchLoader(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    auto source = open_source(json_arg(info, 0, "the source"));
    const LoaderOptions options = loader_options(json_arg(info, 1, "the loader options"));
    const std::int64_t max_batches = info.Length() > 2 && info[2].IsNumber() ? info[2].As<Napi::Number>().Int64Value() : 200;
    const double max_seconds = info.Length() > 3 && info[3].IsNumber() ? info[3].As<Napi::Number>().DoubleValue() : 3.0;
    // {"device": "cuda:N", "gpuPrefetch": depth} copies every batch to the GPU through the prefetch ring.
    const Json opts = json_arg(info, 1, "the loader options");
    const Json* device = opts.find("device");
    int cuda_index = -1;
    if (device && device->is_string() && device->string() != "cpu") cuda_index = resolve_device(device->string()).index;
    const Json* depth_json = opts.find("gpuPrefetch");
    const int depth = depth_json && depth_json->is_number() ? static_cast<int>(depth_json->number()) : 3;
    auto* job = new JsonJob(info.Env(), [source, options, max_batches, max_seconds, cuda_index, depth] {
      static const std::atomic<bool> never{false};
      if (cuda_index >= 0) return bench_loader_device(source, options, cuda_index, depth, max_batches, max_seconds);
      return bench_loader(source, options, max_batches, max_seconds, never);
    });
    job->Queue();
    return job->promise();
  });
}

Napi::Value SequentialRead(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsArray())
      throw make_js_error(info.Env(), "E_BAD_INPUT", "sequentialRead(paths) needs an array of file paths", "");
    std::vector<std::string> files;
    const Napi::Array a = info[0].As<Napi::Array>();
    for (uint32_t i = 0; i < a.Length(); ++i) files.push_back(a.Get(i).As<Napi::String>().Utf8Value());
    auto* job = new JsonJob(info.Env(), [files] { return sequential_read(files); });
    job->Queue();
    return job->promise();
  });
}

Napi::Value BenchH2dCopy(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    if (info.Length() < 3 || !info[0].IsNumber() || !info[1].IsNumber() || !info[2].IsNumber())
      throw make_js_error(info.Env(), "E_BAD_INPUT", "benchH2dCopy(device, bytes, reps) needs three numbers", "");
    const int device = info[0].As<Napi::Number>().Int32Value();
    const double bytes = info[1].As<Napi::Number>().DoubleValue();
    const int reps = info[2].As<Napi::Number>().Int32Value();
    // A fraction or NaN must not become a silently different size; the engine names a whole number out of range.
    if (!(std::fabs(bytes) <= 9.0e15) || bytes != std::floor(bytes))
      throw make_js_error(info.Env(), "E_BAD_INPUT", "copy size " + Napi::Number::New(info.Env(), bytes).ToString().Utf8Value() + " bytes is not a whole number", "");
    const auto n = static_cast<std::int64_t>(bytes);
    auto* job = new JsonJob(info.Env(), [device, n, reps] { return bench_h2d_copy(device, n, reps); });
    job->Queue();
    return job->promise();
  });
}

}  // namespace tb::addon
