#include "optim/optimizer.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "core/threads.h"
#include "cpu/simd_clones.h"

namespace tb {
namespace {

double number_field(const Json& obj, const char* key, double fallback, double lo, double hi, const std::string& path) {
  const Json* v = obj.find(key);
  if (!v) return fallback;
  if (!v->is_number() || !(v->number() >= lo && v->number() <= hi)) {
    TB_THROW(ErrorCode::BadInput, path + "." + key + " must be a number in [" + std::to_string(lo) + ", " +
                                      std::to_string(hi) + "], got " + v->dump());
  }
  return v->number();
}

}  // namespace

OptimizerOptions parse_optimizer(const Json* json) {
  OptimizerOptions o;
  if (!json) return o;
  if (!json->is_object()) TB_THROW(ErrorCode::BadInput, "options.optimizer must be an object");
  const Json* kind = json->find("kind");
  if (kind) {
    if (!kind->is_string() || (kind->string() != "sgd" && kind->string() != "adamw")) {
      TB_THROW(ErrorCode::BadInput, "options.optimizer.kind must be \"sgd\" or \"adamw\", got " + kind->dump());
    }
    o.kind = kind->string();
  }
  if (o.kind == "adamw") {
    o.lr = 1e-3;
    o.weight_decay = 1e-2;
  }
  const std::string p = "options.optimizer";
  o.lr = number_field(*json, "lr", o.lr, 1e-12, 10, p);
  o.momentum = number_field(*json, "momentum", o.momentum, 0, 0.9999, p);
  o.weight_decay = number_field(*json, "weightDecay", o.weight_decay, 0, 1, p);
  o.beta1 = number_field(*json, "beta1", o.beta1, 0, 0.9999, p);
  o.beta2 = number_field(*json, "beta2", o.beta2, 0, 0.999999, p);
  o.eps = number_field(*json, "eps", o.eps, 1e-12, 1, p);
  return o;
}

ScheduleOptions parse_schedule(const Json* json) {
  ScheduleOptions s;
  if (!json) return s;
  if (!json->is_object()) TB_THROW(ErrorCode::BadInput, "options.schedule must be an object");
  const Json* kind = json->find("kind");
  if (kind) {
    if (!kind->is_string() || (kind->string() != "constant" && kind->string() != "warmup_cosine")) {
      TB_THROW(ErrorCode::BadInput, "options.schedule.kind must be \"constant\" or \"warmup_cosine\", got " + kind->dump());
    }
    s.kind = kind->string();
  }
  s.warmup_steps = static_cast<std::int64_t>(number_field(*json, "warmupSteps", 0, 0, 1e12, "options.schedule"));
  s.min_lr = number_field(*json, "minLr", 0, 0, 10, "options.schedule");
  return s;
}

double scheduled_lr(const OptimizerOptions& opt, const ScheduleOptions& sched, std::int64_t step, std::int64_t total) {
  if (sched.kind == "constant") return opt.lr;
  if (step < sched.warmup_steps) return opt.lr * static_cast<double>(step + 1) / static_cast<double>(sched.warmup_steps);
  const double span = static_cast<double>(std::max<std::int64_t>(1, total - sched.warmup_steps));
  const double progress = std::min(1.0, static_cast<double>(step - sched.warmup_steps) / span);
  return sched.min_lr + 0.5 * (opt.lr - sched.min_lr) * (1.0 + std::cos(3.141592653589793 * progress));
}

Optimizer::Optimizer(OptimizerOptions options, std::int64_t size) : options_(std::move(options)) {
  m_.assign(static_cast<size_t>(size), 0.0f);
  if (options_.kind == "adamw") v_.assign(static_cast<size_t>(size), 0.0f);
}

void Optimizer::step(float* params, const float* grads, double lr, ThreadPool* pool) {
  ++t_;
  const std::int64_t n = static_cast<std::int64_t>(m_.size());
  const OptimizerOptions& o = options_;
  if (o.kind == "sgd") {
    const float mu = static_cast<float>(o.momentum), wd = static_cast<float>(o.weight_decay), a = static_cast<float>(lr);
    float* __restrict buf = m_.data();
    auto body = [&](std::int64_t b, std::int64_t e, int) {
      float* __restrict p = params;
      const float* __restrict g = grads;
      for (std::int64_t i = b; i < e; ++i) {
        buf[i] = mu * buf[i] + (g[i] + wd * p[i]);  // first step: buf = g, as PyTorch
        p[i] -= a * buf[i];
      }
    };
    if (pool) pool->parallel_for(n, body, 4096);
    else body(0, n, 0);
    return;
  }
  const double bc1 = 1.0 - std::pow(o.beta1, static_cast<double>(t_));
  const double bc2 = 1.0 - std::pow(o.beta2, static_cast<double>(t_));
  const float b1 = static_cast<float>(o.beta1), b2 = static_cast<float>(o.beta2);
  const float decay = static_cast<float>(1.0 - lr * o.weight_decay);
  const float step_size = static_cast<float>(lr / bc1);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2)), eps = static_cast<float>(o.eps);
  float* __restrict m = m_.data();
  float* __restrict v = v_.data();
  auto body = [&](std::int64_t b, std::int64_t e, int) {
    float* __restrict p = params;
    const float* __restrict gr = grads;
    for (std::int64_t i = b; i < e; ++i) {
      const float g = gr[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      p[i] = p[i] * decay - step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bc2 + eps);
    }
  };
  if (pool) pool->parallel_for(n, body, 4096);
  else body(0, n, 0);
}

// Squares summed in 16 float lanes per 4096-value block, blocks added in double in order: it
// vectorises (the double loop it replaces was 4% of the MLP's step) and stays deterministic.
TB_SIMD_CLONES double grad_norm(const float* grads, std::int64_t n) {
  constexpr int L = 16;
  constexpr std::int64_t kBlock = 4096;
  double s = 0;
  for (std::int64_t b = 0; b < n; b += kBlock) {
    const std::int64_t e = std::min(n, b + kBlock);
    float acc[L] = {};
    std::int64_t i = b;
    for (; i + L <= e; i += L)
      for (int l = 0; l < L; ++l) acc[l] += grads[i + l] * grads[i + l];
    double block = 0;
    for (int l = 0; l < L; ++l) block += acc[l];
    for (; i < e; ++i) block += static_cast<double>(grads[i]) * grads[i];
    s += block;
  }
  return std::sqrt(s);
}

double clip_grad_norm(float* grads, std::int64_t n, double max_norm) {
  const double norm = grad_norm(grads, n);
  if (max_norm > 0 && norm > max_norm) {
    const float scale = static_cast<float>(max_norm / (norm + 1e-6));
    for (std::int64_t i = 0; i < n; ++i) grads[i] *= scale;
  }
  return norm;
}

}  // namespace tb
