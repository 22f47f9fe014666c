// A training session on the CPU backend: the loop, its phase timers,
// evaluation, cancellation and the events streamed to the caller.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/json.h"
#include "core/threads.h"
#include "data/dataset.h"
#include "nn/model.h"
#include "optim/optimizer.h"

namespace tb {

struct TrainOptions {
  int batch_size = 64;    // per micro-batch
  int accumulation = 1;   // micro-batches per optimizer step
  int epochs = 1;
  std::int64_t max_steps = 0;  // 0: every step of every epoch
  double sample_ratio = 1.0;   // fraction of the training set drawn each epoch
  bool shuffle = true;
  double clip_norm = 0;        // 0: no clipping
  int eval_batch_size = 1000;
  double event_interval_s = 0.05;  // at most ~20 step events per second
  OptimizerOptions optimizer;
  ScheduleOptions schedule;
};

// Throws E_BAD_INPUT naming the bad option.
TrainOptions parse_train_options(const Json& json);

struct EvalResult {
  double loss = 0;
  double accuracy = -1;  // -1 when the model has no classification head
  std::int64_t samples = 0;
  Json head_losses = Json::object();
};

class Trainer {
 public:
  // threads <= 0: all cores. The seed fixes initialisation, shuffling and dropout.
  Trainer(const ModelSpec& spec, int threads, std::uint64_t seed);

  Model& model() { return model_; }
  int threads() const { return pool_.size(); }
  void set_data(const std::string& split, Dataset data);  // "train" or "test"
  bool has_data(const std::string& split) const;

  using Emit = std::function<void(const Json&)>;
  // Runs the loop; emits {"type":"step"...} and {"type":"epoch"...} events; returns the summary.
  // Throws E_CANCELLED when `cancel` becomes true (checked between micro-batches).
  Json train(const TrainOptions& options, const std::atomic<bool>& cancel, const Emit& emit);
  EvalResult evaluate(const std::string& split, int batch_size, const std::atomic<bool>& cancel);

 private:
  double run_losses(int B, const std::vector<std::int64_t>& idx, const Dataset& data, double grad_scale, bool want_grad,
                    std::int64_t* correct, Json* head_losses);
  void check_data(const Dataset& data, const std::string& split);
  void gather_inputs(const Dataset& data, const std::vector<std::int64_t>& idx, int B);

  ThreadPool pool_;
  std::uint64_t seed_;
  Model model_;
  std::unique_ptr<Dataset> train_, test_;
  std::vector<float> x_, targets_;
  std::vector<std::int32_t> labels_;
};

}  // namespace tb
