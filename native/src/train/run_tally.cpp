#include "train/run_tally.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/errors.h"

namespace tb {

StepPlan plan_steps(const TrainOptions& o, std::int64_t drawn) {
  StepPlan p;
  p.per_step = static_cast<std::int64_t>(o.batch_size) * o.accumulation;
  p.steps_per_epoch = drawn / p.per_step;
  if (p.steps_per_epoch == 0) {
    TB_THROW(ErrorCode::BadInput, "batch size " + std::to_string(o.batch_size) + " x accumulation " + std::to_string(o.accumulation) +
                                      " needs " + std::to_string(p.per_step) + " samples per step but only " + std::to_string(drawn) +
                                      " are drawn per epoch");
  }
  p.total_steps = p.steps_per_epoch * o.epochs;
  if (o.max_steps > 0) p.total_steps = std::min(p.total_steps, o.max_steps);
  // Benchmarks name their warm-up; otherwise a short one that leaves most of a short run measured.
  p.warmup_steps = o.warmup_steps >= 0 ? std::min(o.warmup_steps, p.total_steps) : std::min<std::int64_t>(5, p.total_steps / 10);
  return p;
}

Json phases_json(const double* seconds, double per) {
  Json o = Json::object();
  for (int p = 0; p < kPhaseCount; ++p) o.set(kPhaseNames[p], per > 0 ? 1000.0 * seconds[p] / per : 0.0);
  return o;
}

void RunTally::collect(StepBackend& backend, int epoch, std::int64_t s) {
  const StepReadout r = backend.readout();
  for (int p = 0; p < kPhaseCount; ++p) phase_[p] += r.phase_seconds[p];
  norm_ = r.grad_norm;
  loss_scale_ = r.loss_scale;
  window_skipped_ += r.skipped_steps;
  skipped_total_ += r.skipped_steps;
  if (r.micro_batches == 0) return;
  if (!std::isfinite(r.loss_sum)) {
    TB_THROW(ErrorCode::Data, "the loss became " + std::string(std::isnan(r.loss_sum) ? "NaN" : "infinite") +
                                  (backend.cheap_readout() ? " at epoch " : " by epoch ") + std::to_string(epoch + 1) + ", step " +
                                  std::to_string(s + 1) + " (learning rate " + std::to_string(lr) +
                                  "): lower the learning rate, clip gradients, or check the data");
  }
  const double mean = r.loss_sum / o_.accumulation;  // per optimizer step
  window_loss_ += mean;
  epoch_loss_ += mean;
  window_correct_ += r.correct;
  epoch_correct_ += r.correct;
}

void RunTally::start_epoch() {
  epoch_loss_ = 0;
  epoch_correct_ = epoch_samples_ = 0;
}

void RunTally::count_step() {
  ++window_steps_;
  window_samples_ += plan_.per_step;
  epoch_samples_ += plan_.per_step;
}

Json RunTally::step_event(int epoch, std::int64_t s, std::int64_t step, double dt) {
  Json e = Json::object();
  e.set("type", "step");
  e.set("epoch", epoch + 1);
  e.set("epochs", o_.epochs);
  e.set("step", s + 1);
  e.set("stepsPerEpoch", plan_.steps_per_epoch);
  e.set("globalStep", step + 1);
  e.set("totalSteps", plan_.total_steps);
  e.set("loss", window_loss_ / window_steps_);
  e.set("accuracy", classifier_ ? Json(static_cast<double>(window_correct_) / window_samples_) : Json());
  e.set("lr", lr);
  e.set("gradNorm", norm_);
  e.set("samplesPerSec", dt > 0 ? window_samples_ / dt : 0.0);
  if (o_.precision == "fp16") e.set("lossScale", loss_scale_);
  if (o_.precision == "fp16" || window_skipped_ > 0) e.set("skippedSteps", window_skipped_);
  double per_phase[kPhaseCount];
  for (int p = 0; p < kPhaseCount; ++p) per_phase[p] = phase_[p] - window_phase_[p];
  e.set("phasesMs", phases_json(per_phase, static_cast<double>(window_steps_)));
  std::copy(phase_, phase_ + kPhaseCount, window_phase_);
  window_loss_ = 0;
  window_steps_ = window_correct_ = window_samples_ = window_skipped_ = 0;
  return e;
}

Json RunTally::epoch_event(int epoch, double seconds) const {
  Json ep = Json::object();
  ep.set("type", "epoch");
  ep.set("epoch", epoch + 1);
  ep.set("epochs", o_.epochs);
  ep.set("seconds", seconds);
  ep.set("trainLoss", epoch_loss_ / std::max<std::int64_t>(1, epoch_samples_ / plan_.per_step));
  ep.set("trainAccuracy", classifier_ ? Json(static_cast<double>(epoch_correct_) / std::max<std::int64_t>(1, epoch_samples_)) : Json());
  return ep;
}

}  // namespace tb
