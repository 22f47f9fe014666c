// What the training loop asks of a backend, so one loop drives the CPU
// reference and the CUDA backend alike. A backend may queue work
// asynchronously: losses, accuracy, gradient norms and phase times come back
// only through readout(), the one place a GPU backend waits for the device.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"
#include "data/loader.h"
#include "nn/memory_model.h"

namespace tb {

enum Phase { kData, kH2D, kForward, kLoss, kBackward, kOptimizer, kPhaseCount };
extern const char* const kPhaseNames[kPhaseCount];

struct StepReadout {
  double loss_sum = 0;              // sum over micro-batches of the weighted mean loss
  std::int64_t micro_batches = 0;
  std::int64_t correct = 0;         // classification hits over the micro-batches
  std::vector<double> head_sums;    // per head: sum of (mean loss x batch size)
  double grad_norm = 0;             // before clipping, of the last optimizer step
  std::int64_t skipped_steps = 0;   // fp16 steps skipped for inf/nan gradients
  double loss_scale = 1;            // current dynamic loss scale (1 without fp16)
  double phase_seconds[kPhaseCount] = {};
};

class StepBackend {
 public:
  virtual ~StepBackend() = default;
  // "cpu" or "cuda:N", and how precision and timing were set up.
  virtual Json describe() const = 0;
  virtual void start_epoch(Loader& loader, int epoch) = 0;
  // Makes the loader's next batch current; false at the end of its epoch.
  virtual bool next_batch(Loader& loader) = 0;
  virtual int batch_size() const = 0;
  virtual void forward(bool train) = 0;
  // Adds every head's loss to the pending sums; writes output gradients (times grad_scale) when want_grad.
  virtual void losses(double grad_scale, bool want_grad) = 0;
  virtual void backward() = 0;
  // Gives the current batch back to the loader or the prefetch ring.
  virtual void release_batch() = 0;
  // Zeroes the gradients and sets the step's learning rate (and, on CUDA, its dropout seed).
  virtual void begin_step(double lr) = 0;
  virtual void optimizer_step(double clip_norm) = 0;
  // Waits for queued work and returns the sums since the last readout (then resets them).
  virtual StepReadout readout() = 0;
  // True when readout() costs nothing (the CPU), so the loop may check every step.
  virtual bool cheap_readout() const = 0;
  // Memory by kind: predicted from the shapes, and in use now (call after a step).
  virtual MemoryBreakdown predicted_memory(int batch, bool adamw, std::int64_t record_bytes, int slots) const = 0;
  virtual MemoryBreakdown measured_memory(const Loader& loader) const = 0;
  // Copies trained parameters and running statistics back into the host model.
  virtual void sync_to_host() = 0;
};

}  // namespace tb
