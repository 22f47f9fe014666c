// The training step's scalars, kept on the device so that nothing in the
// step waits for the host: the loss sums, the gradient norm, the fp16 loss
// scale and whether the optimizer applies the step are all computed there,
// and a captured CUDA graph replays with the new values. The host reads the
// whole struct back only at readout.
#pragma once
#include "optim/loss_scaler.h"  // and TB_HOST_DEVICE

namespace tb::cuda {

constexpr int kMaxHeads = 4;

struct TrainState {
  // Set by the host before each step (through a one-thread kernel, so graph replays see it).
  float lr = 0;
  unsigned long long dropout_seed = 0;
  // Computed on the device during the step.
  LossScale scale{1.0f, 0};   // fp16: dynamic; otherwise 1
  unsigned int nonfinite = 0;  // inf/nan gradient values this step
  double grad_sq = 0;          // sum of squared (still scaled) gradients this step
  float grad_factor = 1;       // 1/scale times the clipping coefficient
  int apply = 1;               // the optimizer applies this step
  int adam_t = 0;              // applied AdamW steps (skipped steps do not count, as in PyTorch)
  float bias_correction1 = 1, bias_correction2 = 1;
  // Accumulated until the host's next readout.
  double grad_norm = 0;        // of the last step, unscaled, before clipping
  double loss_sum = 0;         // sum over micro-batches of the weighted mean loss
  double head_sums[kMaxHeads] = {};
  unsigned long long correct = 0;
  unsigned int micro_batches = 0;
  unsigned int skipped = 0;
};

// After readout: the sums start again; the loss scale, AdamW's step count and the last norm carry on.
TB_HOST_DEVICE inline void reset_readout_sums(TrainState& s) {
  s.loss_sum = 0;
  s.micro_batches = 0;
  s.correct = 0;
  s.skipped = 0;
  for (double& h : s.head_sums) h = 0;
}

// The dropout hash's seed for one layer (salt) and micro-batch of a step: a function of these alone.
TB_HOST_DEVICE inline unsigned long long dropout_mask_seed(unsigned long long step_seed, unsigned long long salt, int micro_batch) {
  return step_seed ^ (salt * 0xD6E8FEB86659FD93ull) ^ (0x9E3779B97F4A7C15ull * (static_cast<unsigned long long>(micro_batch) + 1ull));
}

}  // namespace tb::cuda
