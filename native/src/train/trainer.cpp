#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "core/errors.h"
#include "core/rng.h"
#include "core/device_spec.h"
#include "cuda/cuda_backend.h"
#include "nn/memory_budget.h"
#include "nn/memory_model.h"
#include "train/cpu_backend.h"
#include "train/run_tally.h"

namespace tb {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::int64_t int_option(const Json& j, const char* key, std::int64_t fallback, std::int64_t lo, std::int64_t hi) {
  const Json* v = j.find(key);
  if (!v) return fallback;
  if (!v->is_number() || v->number() != std::floor(v->number()) || v->number() < lo || v->number() > hi) {
    TB_THROW(ErrorCode::BadInput, std::string("options.") + key + " must be an integer from " + std::to_string(lo) +
                                      " to " + std::to_string(hi) + ", got " + v->dump());
  }
  return static_cast<std::int64_t>(v->number());
}

double number_option(const Json& j, const char* key, double fallback, double lo, double hi, bool lo_open = false) {
  const Json* v = j.find(key);
  if (!v) return fallback;
  const double x = v->is_number() ? v->number() : NAN;
  if (!(x <= hi && (lo_open ? x > lo : x >= lo))) {
    TB_THROW(ErrorCode::BadInput, std::string("options.") + key + " must be a number in " + (lo_open ? "(" : "[") +
                                      std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v->dump());
  }
  return x;
}

std::string string_option(const Json& j, const char* key, const std::string& fallback, std::initializer_list<const char*> allowed) {
  const Json* v = j.find(key);
  if (!v) return fallback;
  if (v->is_string())
    for (const char* a : allowed)
      if (v->string() == a) return a;
  std::string names;
  for (const char* a : allowed) names += std::string(names.empty() ? "" : ", ") + a;
  TB_THROW(ErrorCode::BadInput, std::string("options.") + key + " must be one of " + names + ", got " + v->dump());
}

bool bool_option(const Json& j, const char* key, bool fallback) {
  const Json* v = j.find(key);
  if (!v) return fallback;
  if (!v->is_bool()) TB_THROW(ErrorCode::BadInput, std::string("options.") + key + " must be true or false, got " + v->dump());
  return v->boolean();
}

}  // namespace

TrainOptions parse_train_options(const Json& j) {
  if (!j.is_object()) TB_THROW(ErrorCode::BadInput, "training options must be a JSON object");
  TrainOptions o;
  o.batch_size = static_cast<int>(int_option(j, "batchSize", o.batch_size, 1, 1 << 20));
  o.accumulation = static_cast<int>(int_option(j, "accumulation", 1, 1, 4096));
  o.epochs = static_cast<int>(int_option(j, "epochs", 1, 1, 100000));
  o.max_steps = int_option(j, "maxSteps", 0, 0, std::int64_t(1) << 40);
  o.warmup_steps = int_option(j, "warmupSteps", -1, -1, std::int64_t(1) << 40);
  o.sample_ratio = number_option(j, "sampleRatio", 1.0, 0.0, 1.0, true);
  o.clip_norm = number_option(j, "clipNorm", 0.0, 0.0, 1e9);
  // The training micro-batch by default: evaluation then needs no more activation memory than a training
  // step does (at a fixed 1000 it took 2.2 GB for the board network trained at batch 32, 17x its step).
  o.eval_batch_size = static_cast<int>(int_option(j, "evalBatchSize", o.batch_size, 1, 1 << 20));
  o.event_interval_s = number_option(j, "eventIntervalMs", 50, 0, 3.6e6) / 1000.0;
  o.loader_workers = static_cast<int>(int_option(j, "loaderWorkers", 1, 0, 256));
  o.prefetch = static_cast<int>(int_option(j, "prefetch", 2, 1, 256));
  o.shuffle = bool_option(j, "shuffle", true);
  if (const Json* d = j.find("device")) {
    if (!d->is_string()) TB_THROW(ErrorCode::BadInput, "options.device must be 'cpu' or 'cuda:N', got " + d->dump());
    o.device = d->string();
  }
  o.precision = string_option(j, "precision", "fp32", {"fp32", "bf16", "fp16"});
  o.measure_phases = string_option(j, "phaseTiming", "default", {"default", "measure"}) == "measure";
  o.cuda_graph = bool_option(j, "cudaGraph", false);
  o.gpu_prefetch = static_cast<int>(int_option(j, "gpuPrefetch", 3, 1, 16));
  o.memory_limit_bytes = int_option(j, "memoryLimitBytes", 0, 0, std::int64_t(1) << 50);
  o.debug_nonfinite_step = int_option(j, "debugNonfiniteGradAtStep", -1, -1, std::int64_t(1) << 40);
  o.optimizer = parse_optimizer(j.find("optimizer"));
  o.schedule = parse_schedule(j.find("schedule"));
  return o;
}

Trainer::Trainer(const ModelSpec& spec, int threads, std::uint64_t seed)
    : pool_(threads), seed_(seed), model_(spec, seed) {}


const RecordSource* Trainer::source(const std::string& split) const {
  return split == "train" ? train_.get() : split == "test" ? test_.get() : nullptr;
}

std::vector<std::string> Trainer::needed_fields(const RecordSource& data) const {
  std::vector<std::string> names{"x"};
  for (const Head& h : model_.heads()) {
    names.push_back(h.target);
    if (h.loss == LossKind::SoftmaxCESoft && data.field_index(h.target + "_mask") >= 0) names.push_back(h.target + "_mask");
  }
  return names;
}

void Trainer::check_data(const RecordSource& data, const std::string& split) {
  const FieldInfo& x = data.field("x");
  const Dims in = model_.input_dims();
  if (x.record_values() != in.size()) {
    // Both shapes, so the person sees which model fits the data (a board's 104x9x9 is not an image's 1x28x28).
    const auto values = [](const std::vector<std::int64_t>& dims, std::int64_t n) {
      std::string shape;
      int many = 0;
      for (std::int64_t d : dims) many += d > 1;
      if (many < 2) return std::to_string(n) + " values";
      for (size_t i = 0; i < dims.size(); ++i) shape += (i ? "x" : "") + std::to_string(dims[i]);
      return shape + " (" + std::to_string(n) + " values)";
    };
    TB_THROW(ErrorCode::BadInput, split + " field 'x' has " + values(x.shape, x.record_values()) + " per record but the model takes " +
                                      values({in.c, in.h, in.w}, in.size()) + ": choose a model whose input matches the data, or one sized to it");
  }
  for (const Head& h : model_.heads()) {
    const FieldInfo& t = data.field(h.target);
    const std::int64_t out = model_.nodes()[h.node].dims.size();
    if (h.loss == LossKind::SoftmaxCE) {
      if (!dtype_is_integer(t.dtype) || t.record_values() != 1) {
        TB_THROW(ErrorCode::BadInput, split + " field '" + h.target + "' must hold one integer label per record, not " +
                                          std::to_string(t.record_values()) + " " + dtype_name(t.dtype) + " values");
      }
      // Every label is checked once here, in chunks, so a bad one is named before training starts.
      const int f = data.field_index(h.target);
      const std::int64_t chunk = 65536;
      std::vector<std::int64_t> idx;
      std::vector<std::uint8_t> raw;
      std::vector<std::int32_t> labels;
      for (std::int64_t b = 0; b < data.count(); b += chunk) {
        const int n = static_cast<int>(std::min(chunk, data.count() - b));
        idx.resize(n);
        std::iota(idx.begin(), idx.end(), b);
        raw.resize(static_cast<size_t>(n * t.record_bytes()));
        labels.resize(n);
        data.read(f, idx.data(), n, raw.data());
        widen_to_int32(t.dtype, raw.data(), n, labels.data());
        for (int i = 0; i < n; ++i)
          if (labels[i] < 0 || labels[i] >= out) {
            TB_THROW(ErrorCode::BadInput, split + " label " + std::to_string(labels[i]) + " at record " + std::to_string(b + i) +
                                              " is outside [0, " + std::to_string(out) + ") for a model with " +
                                              std::to_string(out) + " classes");
          }
      }
    } else if (t.record_values() != out) {
      TB_THROW(ErrorCode::BadInput, split + " field '" + h.target + "' has " + std::to_string(t.record_values()) +
                                        " values per record but head '" + h.name + "' predicts " + std::to_string(out));
    }
  }
}

void Trainer::set_source(const std::string& split, std::shared_ptr<RecordSource> data) {
  if (split != "train" && split != "test") TB_THROW(ErrorCode::BadInput, "split must be 'train' or 'test', got '" + split + "'");
  check_data(*data, split);
  (split == "train" ? train_ : test_) = std::move(data);
}

bool Trainer::classifies() const {
  return std::any_of(model_.heads().begin(), model_.heads().end(), [](const Head& h) {
    return h.loss == LossKind::SoftmaxCE || h.loss == LossKind::SoftmaxCESoft;
  });
}

std::unique_ptr<StepBackend> Trainer::make_backend(const TrainOptions& o) {
  const DeviceSpec device = resolve_device(o.device);  // names the reason when a cuda:N is missing
  if (device.kind == DeviceKind::Cuda) return make_cuda_backend(model_, device.index, o, seed_);
  if (o.precision != "fp32") {
    TB_THROW(ErrorCode::BadInput, "precision '" + o.precision + "' needs a CUDA device; the CPU backend trains in fp32");
  }
  if (o.cuda_graph) TB_THROW(ErrorCode::BadInput, "options.cudaGraph needs a CUDA device, got device 'cpu'");
  return std::make_unique<CpuBackend>(model_, pool_, seed_, &o.optimizer);
}

namespace {

// The CPU backend's buffers are charged to the run's budget before they are allocated; the model's batch
// buffers are freed and the budget detached however the run ends, so the next run starts at the baseline.
struct CpuCharges {
  MemoryBudget budget;
  Model& model;
  MemoryCharge weights, optimizer, loader, input;
  CpuCharges(std::int64_t limit, Model& m) : budget(limit), model(m) { model.free_batch_buffers(); }
  ~CpuCharges() {
    model.free_batch_buffers();
    model.set_budget(nullptr);
  }
  CpuCharges(const CpuCharges&) = delete;
  CpuCharges& operator=(const CpuCharges&) = delete;
};

Json step_time_json(std::int64_t steps, std::int64_t warmup, double wall, double steady_seconds) {
  const std::int64_t measured = steps - warmup;
  Json t = Json::object();
  t.set("wallClockMeanMs", steps > 0 ? 1000.0 * wall / steps : 0.0);
  t.set("steadyStateMeanMs", measured > 0 ? Json(1000.0 * steady_seconds / measured) : Json());
  t.set("warmupSteps", warmup);
  t.set("note", "wallClockMeanMs covers every step including warm-up and evaluation; steadyStateMeanMs excludes the first warmupSteps steps and evaluation");
  return t;
}

Json test_json(const EvalResult& e) {
  Json t = Json::object();
  t.set("loss", e.loss);
  t.set("accuracy", e.accuracy >= 0 ? Json(e.accuracy) : Json());
  t.set("samples", e.samples);
  t.set("headLosses", e.head_losses);
  return t;
}

}  // namespace

void Trainer::check_run(const TrainOptions& o) const {
  if (!train_) TB_THROW(ErrorCode::BadInput, "no training data: call setData('train', ...) first");
  if (o.memory_limit_bytes > 0 && o.device != "cpu") {
    TB_THROW(ErrorCode::BadInput, "options.memoryLimitBytes caps the CPU backend's memory; on " + o.device +
                                      " the device's own memory is the limit: leave it out or use device 'cpu'");
  }
}

LoaderOptions Trainer::loader_options(const TrainOptions& o) const {
  LoaderOptions lo;
  lo.batch_size = o.batch_size;
  lo.workers = o.loader_workers;
  lo.prefetch = o.prefetch;
  lo.shuffle = o.shuffle;
  lo.seed = seed_;
  lo.sample_ratio = o.sample_ratio;
  lo.fields = needed_fields(*train_);
  lo.pinned = o.device != "cpu";
  return lo;
}

// Forward, losses and backward of each micro-batch, then the update; a cancel is honoured before each micro-batch.
void Trainer::run_step(StepBackend& backend, Loader& loader, RunTally& tally, const TrainOptions& o, const StepPlan& plan, int epoch,
                       std::int64_t s, std::int64_t step, const std::atomic<bool>& cancel) {
  tally.lr = scheduled_lr(o.optimizer, o.schedule, step, plan.total_steps);
  backend.begin_step(tally.lr);
  for (int a = 0; a < o.accumulation; ++a) {
    // The run's own step first: people read the run as its steps (the chart's axis); the epoch's step second.
    if (cancel.load()) TB_THROW(ErrorCode::Cancelled, "training was cancelled at step " + std::to_string(step + 1) + " of " + std::to_string(plan.total_steps) +
                                                           " (epoch " + std::to_string(epoch + 1) + ", its step " + std::to_string(s + 1) + ")");
    if (!backend.next_batch(loader)) TB_THROW(ErrorCode::Internal, "the loader ran out of batches before the epoch's steps");
    backend.forward(true);
    backend.losses(1.0 / o.accumulation, true);
    // Where reading is free, a non-finite loss stops the step before it reaches the weights.
    if (backend.cheap_readout()) tally.collect(backend, epoch, s);
    backend.backward();
    backend.release_batch();
  }
  backend.optimizer_step(o.clip_norm);
  tally.count_step();
}

Json Trainer::train(const TrainOptions& o, const std::atomic<bool>& cancel, const Emit& emit) {
  check_run(o);
  const bool cpu = o.device == "cpu";
  CpuCharges charges(o.memory_limit_bytes, model_);
  if (cpu) {
    const std::int64_t f = sizeof(float);
    charges.weights.attach(&charges.budget, static_cast<std::int64_t>(model_.params().size() + model_.grads().size() + model_.buffers().size()) * f,
                           "weights and gradients");
    charges.optimizer.attach(&charges.budget, model_.param_count() * f * (o.optimizer.kind == "adamw" ? 2 : 1), "optimizer state");
    model_.set_budget(&charges.budget);
  }
  std::unique_ptr<StepBackend> backend = make_backend(o);
  const LoaderOptions lo = loader_options(o);
  std::int64_t record_bytes = 0;
  for (const auto& name : lo.fields) record_bytes += train_->field(name).record_bytes();
  const int slots = lo.workers == 0 ? 1 : lo.prefetch;
  if (cpu) {
    charges.loader.attach(&charges.budget, record_bytes * o.batch_size * slots, "loader batch buffers");
    charges.input.attach(&charges.budget, static_cast<std::int64_t>(o.batch_size) * model_.input_dims().size() * sizeof(float), "widened input batch");
  }
  Loader loader(train_, lo);
  const StepPlan plan = plan_steps(o, loader.records_per_epoch());
  RunTally tally(o, plan, classifies());
  tally.lr = o.optimizer.lr;

  const auto start = Clock::now();
  auto last_emit = start, warm_start = start;
  double eval_seconds_after_warmup = 0;
  std::int64_t step = 0;
  Json epochs = Json::array(), measured_memory;
  EvalResult last_eval;
  for (int epoch = 0; epoch < o.epochs && step < plan.total_steps; ++epoch) {
    backend->start_epoch(loader, epoch);
    const auto epoch_start = Clock::now();
    tally.start_epoch();
    for (std::int64_t s = 0; s < plan.steps_per_epoch && step < plan.total_steps; ++s, ++step) {
      if (step == plan.warmup_steps) {
        tally.collect(*backend, epoch, s);  // waits for the device, so the steady-state clock starts on an idle queue
        warm_start = Clock::now();
      }
      run_step(*backend, loader, tally, o, plan, epoch, s, step, cancel);
      const bool epoch_end = s + 1 == plan.steps_per_epoch || step + 1 == plan.total_steps;
      const bool emit_due = seconds_since(last_emit) >= o.event_interval_s || epoch_end;
      if (backend->cheap_readout() || emit_due || step == 0) tally.collect(*backend, epoch, s);
      // Measured once, after the first full step: evaluation later resizes the buffers to its own batch.
      if (step == 0) measured_memory = backend->measured_memory(loader).to_json();
      if (emit_due) {
        emit(tally.step_event(epoch, s, step, seconds_since(last_emit)));
        last_emit = Clock::now();
      }
    }
    Json ep = tally.epoch_event(epoch, seconds_since(epoch_start));
    if (test_) {
      const auto eval_start = Clock::now();
      last_eval = evaluate_with(*backend, "test", o.eval_batch_size, cancel);
      if (step > plan.warmup_steps) eval_seconds_after_warmup += seconds_since(eval_start);
      ep.set("testLoss", last_eval.loss);
      ep.set("testAccuracy", last_eval.accuracy >= 0 ? Json(last_eval.accuracy) : Json());
    }
    emit(ep);
    epochs.push(ep);
  }
  tally.collect(*backend, o.epochs - 1, plan.steps_per_epoch - 1);  // the device has finished every step
  backend->sync_to_host();

  const double wall = seconds_since(start);
  Json r = Json::object();
  r.set("steps", step);
  r.set("samples", step * plan.per_step);
  r.set("seconds", wall);
  r.set("threads", pool_.size());
  r.set("samplesPerSec", wall > 0 ? step * plan.per_step / wall : 0.0);
  r.set("backend", backend->describe());
  if (o.precision == "fp16") r.set("lossScale", tally.loss_scale());
  // Steps whose gradients held inf/nan were skipped on the GPU; outside fp16 any such step is worth saying.
  if (o.precision == "fp16" || tally.skipped() > 0) r.set("skippedSteps", tally.skipped());
  r.set("stepTime", step_time_json(step, plan.warmup_steps, wall, seconds_since(warm_start) - eval_seconds_after_warmup));
  r.set("phasesMs", phases_json(tally.phases(), static_cast<double>(std::max<std::int64_t>(1, step))));
  Json memory = Json::object();
  memory.set("predicted", backend->predicted_memory(o.batch_size, o.optimizer.kind == "adamw", record_bytes, slots).to_json());
  memory.set("measured", measured_memory);
  memory.set("device", o.device == "cpu" ? "cpu" : o.device);
  if (cpu) memory.set("peakBytes", charges.budget.peak());
  if (o.memory_limit_bytes > 0) memory.set("limitBytes", o.memory_limit_bytes);
  r.set("memory", memory);
  r.set("epochs", epochs);
  if (test_) r.set("test", test_json(last_eval));
  return r;
}

MemoryBreakdown Trainer::predict_memory(const TrainOptions& o) const {
  if (!train_) TB_THROW(ErrorCode::BadInput, "no training data: call setData('train', ...) first");
  std::int64_t record_bytes = 0;
  for (const auto& name : needed_fields(*train_)) record_bytes += train_->field(name).record_bytes();
  return tb::predict_memory(model_, o.batch_size, o.optimizer.kind == "adamw", record_bytes,
                            o.loader_workers == 0 ? 1 : o.prefetch);
}

EvalResult Trainer::evaluate(const std::string& split, int batch_size, const std::atomic<bool>& cancel) {
  CpuBackend backend(model_, pool_, seed_, nullptr);
  return evaluate_with(backend, split, batch_size, cancel);
}

EvalResult Trainer::evaluate_with(StepBackend& backend, const std::string& split, int batch_size, const std::atomic<bool>& cancel) {
  std::shared_ptr<RecordSource> data = split == "train" ? train_ : split == "test" ? test_ : nullptr;
  if (!data) TB_THROW(ErrorCode::BadInput, "no '" + split + "' data to evaluate");
  backend.readout();  // training sums stay with training
  LoaderOptions lo;
  lo.batch_size = batch_size;
  lo.shuffle = false;
  lo.drop_last = false;
  lo.fields = needed_fields(*data);
  Loader loader(data, lo);
  backend.start_epoch(loader, 0);
  while (backend.next_batch(loader)) {
    if (cancel.load()) TB_THROW(ErrorCode::Cancelled, "evaluation was cancelled");
    backend.forward(false);
    backend.losses(1.0, false);
    backend.release_batch();
  }
  const StepReadout sums = backend.readout();
  EvalResult r;
  r.samples = data->count();
  double loss_sum = 0;
  Json means = Json::object();
  for (size_t h = 0; h < model_.heads().size(); ++h) {
    loss_sum += model_.heads()[h].weight * sums.head_sums[h];
    means.set(model_.heads()[h].name, sums.head_sums[h] / r.samples);
  }
  r.loss = loss_sum / r.samples;
  r.accuracy = classifies() ? static_cast<double>(sums.correct) / r.samples : -1;
  r.head_losses = means;
  return r;
}

}  // namespace tb
