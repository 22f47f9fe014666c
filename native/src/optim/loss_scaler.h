// Dynamic loss scaling for fp16 training, PyTorch GradScaler's rule: a step
// whose gradients hold inf/nan is skipped and the scale halves; after
// `growth_interval` clean steps in a row it doubles. One definition, compiled
// for the host (tested on the CPU) and the device (run inside the step).
#pragma once

#if defined(__CUDACC__)
#define TB_HOST_DEVICE __host__ __device__
#else
#define TB_HOST_DEVICE
#endif

namespace tb {

struct LossScale {
  float scale = 65536.0f;  // 2^16, GradScaler's initial scale
  int good_steps = 0;      // clean steps since the last change
};

struct LossScalePolicy {
  float growth = 2.0f, backoff = 0.5f;
  int growth_interval = 2000;
  float min_scale = 1.0f, max_scale = 16777216.0f;  // 2^24 keeps scaled fp32 gradients finite
};

// Returns true when the optimizer may apply this step.
TB_HOST_DEVICE inline bool update_loss_scale(LossScale& s, bool found_nonfinite, const LossScalePolicy& p) {
  if (found_nonfinite) {
    s.scale = s.scale * p.backoff < p.min_scale ? p.min_scale : s.scale * p.backoff;
    s.good_steps = 0;
    return false;
  }
  if (++s.good_steps >= p.growth_interval) {
    s.scale = s.scale * p.growth > p.max_scale ? p.max_scale : s.scale * p.growth;
    s.good_steps = 0;
  }
  return true;
}

}  // namespace tb
