// Optimisers over the flat parameter block, learning-rate schedules and
// gradient clipping. PyTorch's update rules, so results can be compared.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"

namespace tb {

class ThreadPool;

struct OptimizerOptions {
  std::string kind = "sgd";  // "sgd" or "adamw"
  double lr = 0.01;
  double momentum = 0.9;       // sgd
  double weight_decay = 1e-4;  // sgd: L2 added to the gradient; adamw: decoupled
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // adamw
};

struct ScheduleOptions {
  std::string kind = "constant";  // "constant" or "warmup_cosine"
  std::int64_t warmup_steps = 0;
  double min_lr = 0;
};

OptimizerOptions parse_optimizer(const Json* json);
ScheduleOptions parse_schedule(const Json* json);

// Learning rate at optimizer step `step` (0-based) of `total_steps`.
double scheduled_lr(const OptimizerOptions& opt, const ScheduleOptions& sched, std::int64_t step, std::int64_t total_steps);

class Optimizer {
 public:
  Optimizer(OptimizerOptions options, std::int64_t size);
  // One update of params from grads at learning rate lr.
  void step(float* params, const float* grads, double lr, ThreadPool* pool);
  const OptimizerOptions& options() const { return options_; }
  // Bytes of state held (momentum, moments).
  std::int64_t state_bytes() const { return static_cast<std::int64_t>((m_.size() + v_.size()) * sizeof(float)); }

 private:
  OptimizerOptions options_;
  std::vector<float> m_, v_;
  std::int64_t t_ = 0;
};

// Global L2 norm of the gradients (in double).
double grad_norm(const float* grads, std::int64_t n);
// Scales grads so their global norm is at most max_norm; returns the norm before clipping.
double clip_grad_norm(float* grads, std::int64_t n, double max_norm);

}  // namespace tb
