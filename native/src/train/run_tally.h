// What a training run adds up between its events (Trainer::train): the window since the last step
// event, the current epoch and the whole run, and the step and epoch events built from them.
#pragma once
#include <cstdint>

#include "core/json.h"
#include "train/step_backend.h"
#include "train/trainer.h"

namespace tb {

// How a run's steps are laid out: samples per optimizer step, steps per epoch and in all, and the
// warm-up excluded from the steady-state step time.
struct StepPlan {
  std::int64_t per_step = 0, steps_per_epoch = 0, total_steps = 0, warmup_steps = 0;
};
// E_BAD_INPUT, with the numbers, when an epoch cannot fill one optimizer step.
StepPlan plan_steps(const TrainOptions& o, std::int64_t drawn_per_epoch);

// Milliseconds per `per` of each phase's seconds, by phase name.
Json phases_json(const double* seconds, double per);

class RunTally {
 public:
  RunTally(const TrainOptions& o, const StepPlan& plan, bool classifier) : o_(o), plan_(plan), classifier_(classifier) {}

  // Takes the backend's sums into the window, epoch and run; names a non-finite loss with its step.
  void collect(StepBackend& backend, int epoch, std::int64_t s);
  void start_epoch();
  void count_step();
  // The step event for the window that ends at epoch step s (run step `step`), `seconds` after the last
  // one; the window starts again empty.
  Json step_event(int epoch, std::int64_t s, std::int64_t step, double seconds);
  Json epoch_event(int epoch, double seconds) const;

  double lr = 0;
  const double* phases() const { return phase_; }
  std::int64_t skipped() const { return skipped_total_; }
  double loss_scale() const { return loss_scale_; }

 private:
  const TrainOptions& o_;
  const StepPlan plan_;
  const bool classifier_;
  double phase_[kPhaseCount] = {0}, window_phase_[kPhaseCount] = {0};
  double window_loss_ = 0, epoch_loss_ = 0, norm_ = 0, loss_scale_ = 1;
  std::int64_t window_steps_ = 0, window_correct_ = 0, window_samples_ = 0, window_skipped_ = 0;
  std::int64_t epoch_correct_ = 0, epoch_samples_ = 0, skipped_total_ = 0;
};

}  // namespace tb
