#include "addon/trainer_wrap.h"

#include <cstring>
#include <string>
#ifdef __GLIBC__  // defined by the C++ headers above, on glibc only
#include <malloc.h>
#endif

#include "addon/convert.h"
#include "data/open_source.h"
#include "train/checkpoint.h"

namespace tb::addon {
namespace {

// Runs train(), a dry run of it, or evaluate() on a libuv worker thread, delivering
// events through the progress queue (in order, on the JS thread) and settling a promise.
class JobWorker : public Napi::AsyncProgressQueueWorker<Json> {
 public:
  enum class Kind { Train, Check, Evaluate };

  JobWorker(Napi::Env env, TrainerWrap* wrap, Napi::Object self, Kind kind, TrainOptions options, std::string split,
            Napi::Function on_event)
      : Napi::AsyncProgressQueueWorker<Json>(env, "trainbench.train"),
        wrap_(wrap),
        kind_(kind),
        options_(std::move(options)),
        split_(std::move(split)),
        deferred_(Napi::Promise::Deferred::New(env)) {
    self_ = Napi::Persistent(self);  // keeps the Trainer alive while we run
    if (!on_event.IsEmpty()) on_event_ = Napi::Persistent(on_event);
  }

  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute(const ExecutionProgress& progress) override {
    try {
      if (kind_ == Kind::Train) {
        result_ = wrap_->trainer().train(options_, wrap_->cancel_flag(), [&](const Json& e) { progress.Send(&e, 1); });
      } else if (kind_ == Kind::Check) {
        dry_run();
      } else {
        const EvalResult r = wrap_->trainer().evaluate(split_, options_.eval_batch_size, wrap_->cancel_flag());
        result_ = Json::object();
        result_.set("loss", r.loss);
        result_.set("accuracy", r.accuracy >= 0 ? Json(r.accuracy) : Json());
        result_.set("samples", r.samples);
        result_.set("headLosses", r.head_losses);
      }
    } catch (const Error& e) {
      fail(error_code_name(e.code()), e.what(), e.where());
    } catch (const std::bad_alloc&) {
      fail("E_OOM", "host memory allocation failed during training", "");
    } catch (const std::exception& e) {
      fail("E_INTERNAL", e.what(), "");
    }
  }

  void OnProgress(const Json* events, size_t count) override {
    if (on_event_.IsEmpty()) return;
    Napi::HandleScope scope(Env());
    for (size_t i = 0; i < count; ++i) on_event_.Call({to_js(Env(), events[i])});
  }

  void OnOK() override {
    finish();
    deferred_.Resolve(to_js(Env(), result_));
  }

  void OnError(const Napi::Error&) override {
    finish();
    deferred_.Reject(make_js_error(Env(), code_.c_str(), message_, where_).Value());
  }

 private:
  // train() with its stop flag already raised: options, device, backend, loader and the
  // steps per epoch are set up and checked by the same code a real run uses, and the loop
  // stops before its first micro-batch, so nothing trains and every refusal is the real one.
  void dry_run() {
    const std::atomic<bool> stop{true};
    try {
      wrap_->trainer().train(options_, stop, [](const Json&) {});
    } catch (const Error& e) {
      if (e.code() != ErrorCode::Cancelled) throw;
    }
    result_ = Json();
  }

  void fail(const char* code, const std::string& message, const std::string& where) {
    code_ = code;
    message_ = message;
    where_ = where;
    SetError(message);
  }

  void finish() {
    wrap_->busy() = false;
    wrap_->cancel_flag() = false;
  }

  TrainerWrap* wrap_;
  Kind kind_;
  TrainOptions options_;
  std::string split_;
  Napi::Promise::Deferred deferred_;
  Napi::ObjectReference self_;
  Napi::FunctionReference on_event_;
  Json result_;
  std::string code_, message_, where_;
};

void add_field_from_js(Napi::Env env, MemorySource& source, const std::string& name, const Napi::Object& o) {
  FieldInfo f;
  f.name = name;
  const Napi::Value dtype = o.Get("dtype");
  if (!dtype.IsString()) throw make_js_error(env, "E_BAD_INPUT", "field '" + name + "' needs a dtype", "");
  f.dtype = parse_dtype(dtype.As<Napi::String>().Utf8Value());
  const Napi::Value shape = o.Get("shape");
  if (!shape.IsArray()) throw make_js_error(env, "E_BAD_INPUT", "field '" + name + "' needs a per-record shape array", "");
  const Napi::Array arr = shape.As<Napi::Array>();
  for (uint32_t i = 0; i < arr.Length(); ++i) f.shape.push_back(arr.Get(i).As<Napi::Number>().Int64Value());
  const Napi::Value data = o.Get("data");
  if (!data.IsTypedArray()) throw make_js_error(env, "E_BAD_INPUT", "field '" + name + "' data must be a typed array", "");
  const Napi::TypedArray ta = data.As<Napi::TypedArray>();
  const auto* bytes = static_cast<const std::uint8_t*>(ta.ArrayBuffer().Data()) + ta.ByteOffset();
  if (o.Has("scale")) f.scale = o.Get("scale").As<Napi::Number>().FloatValue();
  if (o.Has("offset")) f.offset = o.Get("offset").As<Napi::Number>().FloatValue();
  const std::int64_t record_bytes = f.record_bytes();
  const std::int64_t count = record_bytes > 0 ? static_cast<std::int64_t>(ta.ByteLength()) / record_bytes : 0;
  if (count * record_bytes != static_cast<std::int64_t>(ta.ByteLength())) {
    TB_THROW(ErrorCode::BadInput, "field '" + name + "' holds " + std::to_string(ta.ByteLength()) +
                                      " bytes, not a whole number of " + std::to_string(record_bytes) + "-byte records");
  }
  source.add_field(std::move(f), std::vector<std::uint8_t>(bytes, bytes + ta.ByteLength()), count);
}

// Applies {"x": {"scale": s, "offset": o}, ...} to a source's fields.
void apply_normalize(RecordSource& source, const Json& normalize) {
  for (const auto& kv : normalize.members()) {
    const Json* s = kv.second.find("scale");
    const Json* o = kv.second.find("offset");
    source.set_scale(kv.first, s && s->is_number() ? static_cast<float>(s->number()) : 1.0f,
                     o && o->is_number() ? static_cast<float>(o->number()) : 0.0f);
  }
}

// check(optionsJson) -> Promise<null>: rejects exactly as train(optionsJson) would before its
// first step (bad option, missing device, CPU asked for bf16, batch larger than the data ...).
// A free function on the prototype, so the class declaration (trainer_wrap.h) stays as it is.
Napi::Value CheckTraining(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    if (!info.This().IsObject()) TB_THROW(ErrorCode::BadInput, "check(optionsJson) must be called on a Trainer");
    TrainerWrap* wrap = TrainerWrap::Unwrap(info.This().As<Napi::Object>());
    const TrainOptions options = parse_train_options(json_arg(info, 0, "the training options"));
    wrap->trainer();  // a released trainer is refused here, not on the worker thread
    if (wrap->busy().exchange(true)) TB_THROW(ErrorCode::BadInput, "this trainer is already running a job");
    auto* worker = new JobWorker(info.Env(), wrap, info.This().As<Napi::Object>(), JobWorker::Kind::Check, options, "",
                                 Napi::Function());
    worker->Queue();
    return worker->promise();
  });
}

// predictMemory(optionsJson) -> the memory breakdown train(optionsJson) would use, without training.
Napi::Value PredictMemory(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    if (!info.This().IsObject()) TB_THROW(ErrorCode::BadInput, "predictMemory(optionsJson) must be called on a Trainer");
    TrainerWrap* wrap = TrainerWrap::Unwrap(info.This().As<Napi::Object>());
    const TrainOptions options = parse_train_options(json_arg(info, 0, "the training options"));
    if (wrap->busy()) TB_THROW(ErrorCode::BadInput, "this trainer is running a job");
    return to_js(info.Env(), wrap->trainer().predict_memory(options).to_json());
  });
}

}  // namespace

Napi::Function TrainerWrap::Define(Napi::Env env) {
  Napi::Function ctor = DefineClass(env, "Trainer",
                     {InstanceMethod("info", &TrainerWrap::Info), InstanceMethod("setData", &TrainerWrap::SetData),
                      InstanceMethod("setSource", &TrainerWrap::SetSource),
                      InstanceMethod("train", &TrainerWrap::Train), InstanceMethod("evaluate", &TrainerWrap::Evaluate),
                      InstanceMethod("cancel", &TrainerWrap::Cancel), InstanceMethod("save", &TrainerWrap::Save),
                      InstanceMethod("load", &TrainerWrap::Load), InstanceMethod("params", &TrainerWrap::Params),
                      InstanceMethod("release", &TrainerWrap::Release)});
  ctor.Get("prototype").As<Napi::Object>().Set("check", Napi::Function::New(env, CheckTraining, "check"));
  ctor.Get("prototype").As<Napi::Object>().Set("predictMemory", Napi::Function::New(env, PredictMemory, "predictMemory"));
  return ctor;
}

// new Trainer(specJson, { threads, seed } as JSON)
TrainerWrap::TrainerWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<TrainerWrap>(info) {
  guarded(info, [this](const Napi::CallbackInfo& info) -> Napi::Value {
    const ModelSpec spec = parse_model_spec(json_arg(info, 0, "the model spec"));
    const Json opts = info.Length() > 1 ? json_arg(info, 1, "the trainer options") : Json::object();
    const Json* threads = opts.find("threads");
    const Json* seed = opts.find("seed");
    if (threads && (!threads->is_number() || threads->number() < 0 || threads->number() > 1024))
      TB_THROW(ErrorCode::BadInput, "threads must be 0 (all cores) to 1024, got " + threads->dump());
    if (seed && (!seed->is_number() || seed->number() < 0))
      TB_THROW(ErrorCode::BadInput, "seed must be a non-negative integer, got " + seed->dump());
    trainer_ = std::make_unique<Trainer>(spec, threads ? static_cast<int>(threads->number()) : 0,
                                         seed ? static_cast<std::uint64_t>(seed->number()) : 0);
    return info.Env().Undefined();
  });
}

Trainer& TrainerWrap::trainer() {
  if (!trainer_) TB_THROW(ErrorCode::BadInput, "this trainer was released: make a new one");
  return *trainer_;
}

// release(): frees the model's buffers and unmaps the data now, not when the garbage collector
// gets to this small JS object (a host running one trainer per repetition grew ~250 MB per run).
Napi::Value TrainerWrap::Release(const Napi::CallbackInfo& info) {
  return guarded(info, [this](const Napi::CallbackInfo& info) -> Napi::Value {
    if (busy_) TB_THROW(ErrorCode::BadInput, "cannot release a trainer while a job is running");
    trainer_.reset();
#ifdef __GLIBC__
    // glibc keeps freed blocks in each thread's arena; the next trainer may be of another size, so they go back now.
    malloc_trim(0);
#endif
    return info.Env().Undefined();
  });
}

Napi::Value TrainerWrap::Info(const Napi::CallbackInfo& info) {
  return guarded(info, [this](const Napi::CallbackInfo& info) -> Napi::Value {
    Json j = model_info_json(trainer().model());
    j.set("threads", trainer().threads());
    return to_js(info.Env(), j);
  });
}

// setData(split, { name: { dtype, shape, data, scale?, offset? } })
Napi::Value TrainerWrap::SetData(const Napi::CallbackInfo& info) {
  return guarded(info, [this](const Napi::CallbackInfo& info) -> Napi::Value {
    Napi::Env env = info.Env();
    if (busy_) TB_THROW(ErrorCode::BadInput, "cannot change data while a job is running");
    if (info.Length() < 2 || !info[0].IsString() || !info[1].IsObject())
      throw make_js_error(env, "E_BAD_INPUT", "setData(split, fields) needs a split name and an object of fields", "");
    auto source = std::make_shared<MemorySource>();
    const Napi::Object fields = info[1].As<Napi::Object>();
    const Napi::Array names = fields.GetPropertyNames();
    for (uint32_t i = 0; i < names.Length(); ++i) {
      const std::string name = names.Get(i).As<Napi::String>().Utf8Value();
      add_field_from_js(env, *source, name, fields.Get(name).As<Napi::Object>());
    }
    trainer().set_source(info[0].As<Napi::String>().Utf8Value(), source);
    return env.Undefined();
  });
}

// setSource(split, sourceJson, normalizeJson?) -> { records, fields }: a cache or raw source files.
Napi::Value TrainerWrap::SetSource(const Napi::CallbackInfo& info) {
  return guarded(info, [this](const Napi::CallbackInfo& info) -> Napi::Value {
    if (busy_) TB_THROW(ErrorCode::BadInput, "cannot change data while a job is running");
    if (info.Length() < 2 || !info[0].IsString())
      throw make_js_error(info.Env(), "E_BAD_INPUT", "setSource(split, sourceJson, normalizeJson?) needs a split name", "");
    std::shared_ptr<RecordSource> source = open_source(json_arg(info, 1, "the source"));
    if (info.Length() > 2 && info[2].IsString()) apply_normalize(*source, json_arg(info, 2, "the normalisation"));
    trainer().set_source(info[0].As<Napi::String>().Utf8Value(), source);
    return to_js(info.Env(), source_info_json(*source));
  });
}

// train(optionsJson, onEvent) -> Promise<summary>
Napi::Value TrainerWrap::Train(const Napi::CallbackInfo& info) {
  return guarded(info, [this](const Napi::CallbackInfo& info) -> Napi::Value {
    const TrainOptions options = parse_train_options(json_arg(info, 0, "the training options"));
    Napi::Function on_event = info.Length() > 1 && info[1].IsFunction() ? info[1].As<Napi::Function>() : Napi::Function();
    trainer();  // a released trainer is refused here, not on the worker thread
    if (busy_.exchange(true)) TB_THROW(ErrorCode::BadInput, "this trainer is already running a job");
    cancel_ = false;
    auto* worker = new JobWorker(info.Env(), this, Value(), JobWorker::Kind::Train, options, "", on_event);
    worker->Queue();
    return worker->promise();
  });
}

// evaluate(split, batchSize?) -> Promise<{ loss, accuracy, samples }>
Napi::Value TrainerWrap::Evaluate(const Napi::CallbackInfo& info) {
  return guarded(info, [this](const Napi::CallbackInfo& info) -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsString())
      throw make_js_error(info.Env(), "E_BAD_INPUT", "evaluate(split) needs 'train' or 'test'", "");
    TrainOptions options;
    if (info.Length() > 1 && info[1].IsNumber()) options.eval_batch_size = std::max(1, info[1].As<Napi::Number>().Int32Value());
    trainer();  // a released trainer is refused here, not on the worker thread
    if (busy_.exchange(true)) TB_THROW(ErrorCode::BadInput, "this trainer is already running a job");
    auto* worker = new JobWorker(info.Env(), this, Value(), JobWorker::Kind::Evaluate, options,
                                 info[0].As<Napi::String>().Utf8Value(), Napi::Function());
    worker->Queue();
    return worker->promise();
  });
}

Napi::Value TrainerWrap::Cancel(const Napi::CallbackInfo& info) {
  cancel_ = true;
  return Napi::Boolean::New(info.Env(), busy_.load());
}

Napi::Value TrainerWrap::Save(const Napi::CallbackInfo& info) {
  return guarded(info, [this](const Napi::CallbackInfo& info) -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsString())
      throw make_js_error(info.Env(), "E_BAD_INPUT", "save(path) needs a file path", "");
    if (busy_) TB_THROW(ErrorCode::BadInput, "cannot save while a job is running");
    Json meta = Json::object();
    meta.set("trainbench_spec", trainer().model().spec().source.dump());
    meta.set("trainbench_version", TB_VERSION);
    save_checkpoint(trainer().model(), info[0].As<Napi::String>().Utf8Value(), meta);
    return info.Env().Undefined();
  });
}

Napi::Value TrainerWrap::Load(const Napi::CallbackInfo& info) {
  return guarded(info, [this](const Napi::CallbackInfo& info) -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsString())
      throw make_js_error(info.Env(), "E_BAD_INPUT", "load(path) needs a file path", "");
    if (busy_) TB_THROW(ErrorCode::BadInput, "cannot load while a job is running");
    return to_js(info.Env(), load_checkpoint(trainer().model(), info[0].As<Napi::String>().Utf8Value()));
  });
}

// A copy of the flat parameter block, for tests and tools.
Napi::Value TrainerWrap::Params(const Napi::CallbackInfo& info) {
  return guarded(info, [this](const Napi::CallbackInfo& info) -> Napi::Value {
    const auto& p = trainer().model().params();
    Napi::Float32Array out = Napi::Float32Array::New(info.Env(), p.size());
    std::memcpy(out.Data(), p.data(), p.size() * sizeof(float));
    return out;
  });
}

Json source_info_json(const RecordSource& source) {
  Json j = Json::object();
  j.set("records", source.count());
  j.set("description", source.describe());
  Json fields = Json::array();
  for (const FieldInfo& f : source.fields()) {
    Json o = Json::object();
    o.set("name", f.name);
    o.set("dtype", dtype_name(f.dtype));
    Json shape = Json::array();
    for (auto d : f.shape) shape.push(Json(d));
    o.set("shape", shape);
    o.set("recordBytes", f.record_bytes());
    fields.push(o);
  }
  j.set("fields", fields);
  return j;
}

Json model_info_json(const Model& model) {
  Json j = Json::object();
  j.set("family", model.spec().family);
  j.set("params", model.param_count());
  j.set("flopsPerSample", model.flops_per_sample());
  j.set("trainingFlopsPerSample", model.training_flops_per_sample());
  Json input = Json::array();
  for (int d : model.spec().input) input.push(Json(d));
  j.set("input", input);
  Json layers = Json::array();
  for (const Node& n : model.nodes()) {
    Json l = Json::object();
    l.set("name", n.name);
    l.set("kind", node_kind_name(n.kind));
    l.set("shape", Json::array({Json(n.dims.c), Json(n.dims.h), Json(n.dims.w)}));
    layers.push(l);
  }
  j.set("layers", layers);
  Json params = Json::array();
  for (const ParamEntry& e : model.entries()) {
    Json p = Json::object();
    p.set("name", e.name);
    Json shape = Json::array();
    for (auto d : e.shape) shape.push(Json(d));
    p.set("shape", shape);
    p.set("trainable", !e.is_buffer());
    params.push(p);
  }
  j.set("parameters", params);
  Json heads = Json::array();
  const char* losses[] = {"softmax_ce", "softmax_ce_soft", "bce_logits", "mse"};
  for (const Head& h : model.heads()) {
    Json o = Json::object();
    o.set("name", h.name);
    o.set("loss", losses[static_cast<int>(h.loss)]);
    o.set("target", h.target);
    o.set("outputs", model.nodes()[h.node].dims.size());
    heads.push(o);
  }
  j.set("heads", heads);
  return j;
}

Napi::Value ModelInfo(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const Model model(parse_model_spec(json_arg(info, 0, "the model spec")), 0);
    return to_js(info.Env(), model_info_json(model));
  });
}

}  // namespace tb::addon
