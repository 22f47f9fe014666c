// The CPU backend of the training loop: the readable reference the CUDA
// backend is checked against. Everything runs synchronously on the thread
// pool; phases are timed with a steady clock.
#pragma once
#include <chrono>
#include <memory>

#include "core/rng.h"
#include "core/threads.h"
#include "nn/model.h"
#include "optim/optimizer.h"
#include "train/step_backend.h"

namespace tb {

class CpuBackend : public StepBackend {
 public:
  // optimizer may be null for evaluation only.
  CpuBackend(Model& model, ThreadPool& pool, std::uint64_t seed, const OptimizerOptions* optimizer);

  Json describe() const override;
  void start_epoch(Loader& loader, int epoch) override;
  bool next_batch(Loader& loader) override;
  int batch_size() const override { return batch_ ? batch_->size : 0; }
  void forward(bool train) override;
  void losses(double grad_scale, bool want_grad) override;
  void backward() override;
  void release_batch() override { batch_ = nullptr; }
  void begin_step(double lr) override {
    model_.zero_grads();
    lr_ = lr;
  }
  void optimizer_step(double clip_norm) override;
  StepReadout readout() override;
  bool cheap_readout() const override { return true; }
  MemoryBreakdown predicted_memory(int batch, bool adamw, std::int64_t record_bytes, int slots) const override {
    return predict_memory(model_, batch, adamw, record_bytes, slots);
  }
  MemoryBreakdown measured_memory(const Loader& loader) const override;
  void sync_to_host() override {}

 private:
  using Clock = std::chrono::steady_clock;
  void add_time(Phase p, Clock::time_point since);
  const float* widen_field(const std::string& name, std::vector<float>& buf);

  Model& model_;
  ThreadPool& pool_;
  Rng dropout_rng_;
  std::unique_ptr<Optimizer> optimizer_;
  const Loader* loader_ = nullptr;
  const Batch* batch_ = nullptr;
  std::vector<float> x_, targets_, mask_;
  std::vector<std::int32_t> labels_;
  StepReadout pending_;
  double lr_ = 0;
};

}  // namespace tb
