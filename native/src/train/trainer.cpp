#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "core/errors.h"
#include "core/rng.h"
#include "nn/memory_model.h"

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

const char* phase_names[] = {"data", "forward", "loss", "backward", "optimizer"};
constexpr int kPhases = 5;

Json phases_json(const double* seconds, double per) {
  Json o = Json::object();
  for (int p = 0; p < kPhases; ++p) o.set(phase_names[p], per > 0 ? 1000.0 * seconds[p] / per : 0.0);
  return o;
}

}  // namespace

TrainOptions parse_train_options(const Json& j) {
  if (!j.is_object()) TB_THROW(ErrorCode::BadInput, "training options must be a JSON object");
  TrainOptions o;
  o.batch_size = static_cast<int>(int_option(j, "batchSize", o.batch_size, 1, 1 << 20));
  o.accumulation = static_cast<int>(int_option(j, "accumulation", 1, 1, 4096));
  o.epochs = static_cast<int>(int_option(j, "epochs", 1, 1, 100000));
  o.max_steps = int_option(j, "maxSteps", 0, 0, std::int64_t(1) << 40);
  o.sample_ratio = number_option(j, "sampleRatio", 1.0, 0.0, 1.0, true);
  o.clip_norm = number_option(j, "clipNorm", 0.0, 0.0, 1e9);
  o.eval_batch_size = static_cast<int>(int_option(j, "evalBatchSize", 1000, 1, 1 << 20));
  o.event_interval_s = number_option(j, "eventIntervalMs", 50, 0, 3.6e6) / 1000.0;
  o.loader_workers = static_cast<int>(int_option(j, "loaderWorkers", 1, 0, 256));
  o.prefetch = static_cast<int>(int_option(j, "prefetch", 2, 1, 256));
  if (const Json* s = j.find("shuffle")) {
    if (!s->is_bool()) TB_THROW(ErrorCode::BadInput, "options.shuffle must be true or false, got " + s->dump());
    o.shuffle = s->boolean();
  }
  o.optimizer = parse_optimizer(j.find("optimizer"));
  o.schedule = parse_schedule(j.find("schedule"));
  return o;
}

Trainer::Trainer(const ModelSpec& spec, int threads, std::uint64_t seed)
    : pool_(threads), seed_(seed), model_(spec, seed) {}

bool Trainer::has_data(const std::string& split) const { return source(split) != nullptr; }

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
    TB_THROW(ErrorCode::BadInput, split + " field 'x' has " + std::to_string(x.record_values()) +
                                      " values per record but the model's input needs " + std::to_string(in.size()));
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

const float* Trainer::widen_field(const Loader& loader, const Batch& batch, const std::string& name, std::vector<float>& buf) {
  const int slot = loader.slot_of(name);
  const FieldInfo& f = loader.loaded_field(slot);
  buf.resize(static_cast<size_t>(batch.size * f.record_values()));
  widen_to_float(f.dtype, batch.data[static_cast<size_t>(slot)].data(), batch.size * f.record_values(), buf.data(), f.scale, f.offset);
  return buf.data();
}

void Trainer::widen_inputs(const Loader& loader, const Batch& batch) { widen_field(loader, batch, "x", x_); }

// Computes every head's loss for the current forward pass; writes output gradients when asked.
double Trainer::run_losses(const Loader& loader, const Batch& batch, double grad_scale, bool want_grad,
                           std::int64_t* correct, Json* head_losses) {
  const int B = batch.size;
  double total = 0;
  for (const Head& h : model_.heads()) {
    const int K = static_cast<int>(model_.nodes()[h.node].dims.size());
    const float* out = model_.output(h);
    float* d = want_grad ? model_.output_grad(h) : nullptr;
    const double scale = grad_scale * h.weight;
    double loss = 0;
    switch (h.loss) {
      case LossKind::SoftmaxCE: {
        const int slot = loader.slot_of(h.target);
        labels_.resize(B);
        widen_to_int32(loader.loaded_field(slot).dtype, batch.data[static_cast<size_t>(slot)].data(), B, labels_.data());
        loss = softmax_ce_forward_backward(d, out, labels_.data(), B, K, scale, correct);
        break;
      }
      case LossKind::SoftmaxCESoft: {
        const float* t = widen_field(loader, batch, h.target, targets_);
        const float* mask = loader.slot_of(h.target + "_mask") >= 0 ? widen_field(loader, batch, h.target + "_mask", mask_) : nullptr;
        loss = softmax_ce_soft_forward_backward(d, out, t, mask, B, K, scale);
        // Accuracy of a soft-target head: the top prediction agrees with the target's top class.
        if (correct)
          for (int b = 0; b < B; ++b) {
            if (mask && mask[b] == 0.0f) continue;
            const float* o = out + static_cast<std::int64_t>(b) * K;
            const float* tt = t + static_cast<std::int64_t>(b) * K;
            *correct += std::max_element(o, o + K) - o == std::max_element(tt, tt + K) - tt;
          }
        break;
      }
      case LossKind::BceLogits:
        loss = bce_logits_forward_backward(d, out, widen_field(loader, batch, h.target, targets_), B, scale);
        break;
      case LossKind::Mse:
        loss = mse_forward_backward(d, out, widen_field(loader, batch, h.target, targets_), static_cast<std::int64_t>(B) * K, scale);
        break;
    }
    if (head_losses) {
      const Json* prev = head_losses->find(h.name);
      head_losses->set(h.name, (prev ? prev->number() : 0.0) + loss * B);
    }
    total += h.weight * loss;
  }
  return total;
}

Json Trainer::train(const TrainOptions& o, const std::atomic<bool>& cancel, const Emit& emit) {
  if (!train_) TB_THROW(ErrorCode::BadInput, "no training data: call setData('train', ...) first");
  LoaderOptions lo;
  lo.batch_size = o.batch_size;
  lo.workers = o.loader_workers;
  lo.prefetch = o.prefetch;
  lo.shuffle = o.shuffle;
  lo.seed = seed_;
  lo.sample_ratio = o.sample_ratio;
  lo.fields = needed_fields(*train_);
  Loader loader(train_, lo);
  const std::int64_t drawn = loader.records_per_epoch();
  const std::int64_t per_step = static_cast<std::int64_t>(o.batch_size) * o.accumulation;
  const std::int64_t steps_per_epoch = drawn / per_step;
  if (steps_per_epoch == 0) {
    TB_THROW(ErrorCode::BadInput, "batch size " + std::to_string(o.batch_size) + " x accumulation " +
                                      std::to_string(o.accumulation) + " needs " + std::to_string(per_step) +
                                      " samples per step but only " + std::to_string(drawn) + " are drawn per epoch");
  }
  std::int64_t total_steps = steps_per_epoch * o.epochs;
  if (o.max_steps > 0) total_steps = std::min(total_steps, o.max_steps);
  const bool classifies = std::any_of(model_.heads().begin(), model_.heads().end(), [](const Head& h) {
    return h.loss == LossKind::SoftmaxCE || h.loss == LossKind::SoftmaxCESoft;
  });

  Optimizer optimizer(o.optimizer, model_.param_count());
  Rng dropout_rng = Rng::derive(seed_, 0xD50);
  const double grad_scale = 1.0 / o.accumulation;

  const auto start = Clock::now();
  auto last_emit = start;
  std::int64_t step = 0;
  double phase[kPhases] = {0}, window_phase[kPhases] = {0};
  double window_loss = 0, epoch_loss = 0, step_seconds_after_warmup = 0;
  std::int64_t window_steps = 0, window_correct = 0, window_samples = 0, epoch_correct = 0, epoch_samples = 0;
  const std::int64_t warmup_steps = std::min<std::int64_t>(5, total_steps / 10);
  double lr = o.optimizer.lr, norm = 0;
  Json epochs = Json::array();
  Json measured_memory;
  EvalResult last_eval;

  for (int epoch = 0; epoch < o.epochs && step < total_steps; ++epoch) {
    loader.start_epoch(epoch);
    const auto epoch_start = Clock::now();
    epoch_loss = 0;
    epoch_correct = epoch_samples = 0;
    for (std::int64_t s = 0; s < steps_per_epoch && step < total_steps; ++s, ++step) {
      const auto step_start = Clock::now();
      model_.zero_grads();
      double step_loss = 0;
      for (int a = 0; a < o.accumulation; ++a) {
        if (cancel.load()) TB_THROW(ErrorCode::Cancelled, "training was cancelled at epoch " + std::to_string(epoch + 1) +
                                                               ", step " + std::to_string(s + 1));
        auto t = Clock::now();
        const Batch* batch = loader.next();
        if (!batch) TB_THROW(ErrorCode::Internal, "the loader ran out of batches before the epoch's steps");
        widen_inputs(loader, *batch);
        phase[0] += seconds_since(t), t = Clock::now();
        model_.forward(x_.data(), o.batch_size, true, &dropout_rng, &pool_);
        phase[1] += seconds_since(t), t = Clock::now();
        std::int64_t correct = 0;
        const double loss = run_losses(loader, *batch, grad_scale, true, &correct, nullptr);
        if (!std::isfinite(loss)) {
          TB_THROW(ErrorCode::Data, "the loss became " + std::string(std::isnan(loss) ? "NaN" : "infinite") + " at epoch " +
                                        std::to_string(epoch + 1) + ", step " + std::to_string(s + 1) +
                                        " (learning rate " + std::to_string(lr) +
                                        "): lower the learning rate, clip gradients, or check the data");
        }
        phase[2] += seconds_since(t), t = Clock::now();
        model_.backward(&pool_);
        phase[3] += seconds_since(t);
        step_loss += loss / o.accumulation;
        window_correct += correct;
        epoch_correct += correct;
      }
      auto t = Clock::now();
      norm = clip_grad_norm(model_.grads().data(), model_.param_count(), o.clip_norm);
      lr = scheduled_lr(o.optimizer, o.schedule, step, total_steps);
      optimizer.step(model_.params().data(), model_.grads().data(), lr, &pool_);
      phase[4] += seconds_since(t);
      if (step >= warmup_steps) step_seconds_after_warmup += seconds_since(step_start);
      // Measured once, after the first full step: evaluation later resizes the buffers to its own batch.
      if (step == 0) {
        measured_memory = measure_memory(model_, optimizer.state_bytes(), loader.buffer_bytes(),
                                         static_cast<std::int64_t>(x_.size() * sizeof(float))).to_json();
      }

      window_loss += step_loss;
      epoch_loss += step_loss;
      ++window_steps;
      window_samples += per_step;
      epoch_samples += per_step;
      const bool epoch_end = s + 1 == steps_per_epoch || step + 1 == total_steps;
      if (seconds_since(last_emit) >= o.event_interval_s || epoch_end) {
        const double dt = seconds_since(last_emit);
        Json e = Json::object();
        e.set("type", "step");
        e.set("epoch", epoch + 1);
        e.set("epochs", o.epochs);
        e.set("step", static_cast<std::int64_t>(s + 1));
        e.set("stepsPerEpoch", steps_per_epoch);
        e.set("globalStep", step + 1);
        e.set("totalSteps", total_steps);
        e.set("loss", window_loss / window_steps);
        e.set("accuracy", classifies ? Json(static_cast<double>(window_correct) / window_samples) : Json());
        e.set("lr", lr);
        e.set("gradNorm", norm);
        e.set("samplesPerSec", dt > 0 ? window_samples / dt : 0.0);
        double per_phase[kPhases];
        for (int p = 0; p < kPhases; ++p) per_phase[p] = phase[p] - window_phase[p];
        e.set("phasesMs", phases_json(per_phase, static_cast<double>(window_steps)));
        std::copy(phase, phase + kPhases, window_phase);
        emit(e);
        last_emit = Clock::now();
        window_loss = 0;
        window_steps = window_correct = window_samples = 0;
      }
    }
    Json ep = Json::object();
    ep.set("type", "epoch");
    ep.set("epoch", epoch + 1);
    ep.set("epochs", o.epochs);
    ep.set("seconds", seconds_since(epoch_start));
    ep.set("trainLoss", epoch_loss / std::max<std::int64_t>(1, epoch_samples / per_step));
    ep.set("trainAccuracy", classifies ? Json(static_cast<double>(epoch_correct) / std::max<std::int64_t>(1, epoch_samples)) : Json());
    if (test_) {
      last_eval = evaluate("test", o.eval_batch_size, cancel);
      ep.set("testLoss", last_eval.loss);
      ep.set("testAccuracy", last_eval.accuracy >= 0 ? Json(last_eval.accuracy) : Json());
    }
    emit(ep);
    epochs.push(ep);
  }

  const double wall = seconds_since(start);
  const std::int64_t measured = step - warmup_steps;
  Json r = Json::object();
  r.set("steps", step);
  r.set("samples", step * per_step);
  r.set("seconds", wall);
  r.set("threads", pool_.size());
  r.set("samplesPerSec", wall > 0 ? step * per_step / wall : 0.0);
  Json timing = Json::object();
  timing.set("wallClockMeanMs", step > 0 ? 1000.0 * wall / step : 0.0);
  timing.set("steadyStateMeanMs", measured > 0 ? 1000.0 * step_seconds_after_warmup / measured : Json());
  timing.set("warmupSteps", warmup_steps);
  timing.set("note", "wallClockMeanMs covers every step including warm-up and evaluation; steadyStateMeanMs excludes the first warmupSteps steps and evaluation");
  r.set("stepTime", timing);
  r.set("phasesMs", phases_json(phase, static_cast<double>(std::max<std::int64_t>(1, step))));
  std::int64_t record_bytes = 0;
  for (const auto& name : lo.fields) record_bytes += train_->field(name).record_bytes();
  const int slots = lo.workers == 0 ? 1 : lo.prefetch;
  Json memory = Json::object();
  memory.set("predicted", predict_memory(model_, o.batch_size, o.optimizer.kind == "adamw", record_bytes, slots).to_json());
  memory.set("measured", measured_memory);
  memory.set("device", "cpu");
  r.set("memory", memory);
  r.set("epochs", epochs);
  if (test_) {
    Json t = Json::object();
    t.set("loss", last_eval.loss);
    t.set("accuracy", last_eval.accuracy >= 0 ? Json(last_eval.accuracy) : Json());
    t.set("samples", last_eval.samples);
    t.set("headLosses", last_eval.head_losses);
    r.set("test", t);
  }
  return r;
}

EvalResult Trainer::evaluate(const std::string& split, int batch_size, const std::atomic<bool>& cancel) {
  std::shared_ptr<RecordSource> data = split == "train" ? train_ : split == "test" ? test_ : nullptr;
  if (!data) TB_THROW(ErrorCode::BadInput, "no '" + split + "' data to evaluate");
  EvalResult r;
  const bool classifies = std::any_of(model_.heads().begin(), model_.heads().end(), [](const Head& h) {
    return h.loss == LossKind::SoftmaxCE || h.loss == LossKind::SoftmaxCESoft;
  });
  LoaderOptions lo;
  lo.batch_size = batch_size;
  lo.shuffle = false;
  lo.drop_last = false;
  lo.fields = needed_fields(*data);
  Loader loader(data, lo);
  loader.start_epoch(0);
  std::int64_t correct = 0;
  double loss_sum = 0;
  while (const Batch* batch = loader.next()) {
    if (cancel.load()) TB_THROW(ErrorCode::Cancelled, "evaluation was cancelled");
    widen_inputs(loader, *batch);
    model_.forward(x_.data(), batch->size, false, nullptr, &pool_);
    loss_sum += batch->size * run_losses(loader, *batch, 1.0, false, &correct, &r.head_losses);
  }
  r.samples = data->count();
  r.loss = loss_sum / r.samples;
  r.accuracy = classifies ? static_cast<double>(correct) / r.samples : -1;
  Json means = Json::object();
  for (const auto& kv : r.head_losses.members()) means.set(kv.first, kv.second.number() / r.samples);
  r.head_losses = means;
  return r;
}

}  // namespace tb
