// A training session: the loop, evaluation, cancellation and the events
// streamed to the caller. The loop drives a StepBackend: the CPU reference or
// the CUDA backend, chosen by options.device.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/json.h"
#include "core/threads.h"
#include "data/loader.h"
#include "data/record_source.h"
#include "nn/model.h"
#include "optim/optimizer.h"
#include "train/step_backend.h"

namespace tb {

class RunTally;
struct StepPlan;

struct TrainOptions {
  int batch_size = 64;    // per micro-batch
  int accumulation = 1;   // micro-batches per optimizer step
  int epochs = 1;
  std::int64_t max_steps = 0;  // 0: every step of every epoch
  std::int64_t warmup_steps = -1;  // steps before the steady-state clock starts; -1: min(5, total/10)
  double sample_ratio = 1.0;   // fraction of the training set drawn each epoch
  bool shuffle = true;
  double clip_norm = 0;        // 0: no clipping
  int eval_batch_size = 1000;  // options.evalBatchSize; parse_train_options defaults it to batch_size
  double event_interval_s = 0.05;  // at most ~20 step events per second
  int loader_workers = 1;          // threads gathering batches ahead of the step
  int prefetch = 2;                // batches buffered ahead
  OptimizerOptions optimizer;
  ScheduleOptions schedule;
  std::string device = "cpu";       // "cpu" or "cuda:N"
  std::string precision = "fp32";   // "fp32", "bf16" or "fp16" (mixed precision, CUDA only)
  bool measure_phases = false;      // CUDA: synchronise at every phase boundary (exact, but slows the step)
  bool cuda_graph = false;          // CUDA: replay the captured step once shapes are fixed
  int gpu_prefetch = 3;             // CUDA: device batch buffers filled ahead on the copy stream
  std::int64_t memory_limit_bytes = 0;     // CPU: caps the engine's allocations (E_OOM beyond it); 0: no cap
  std::int64_t debug_nonfinite_step = -1;  // tests: forces an inf gradient at this optimizer step (CUDA)
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
  // "train" or "test": arrays in memory, a memory-mapped cache or raw source files.
  // Checks the fields the model needs (shapes, label range) before accepting it.
  void set_source(const std::string& split, std::shared_ptr<RecordSource> source);
  const RecordSource* source(const std::string& split) const;

  using Emit = std::function<void(const Json&)>;
  // Runs the loop; emits {"type":"step"...} and {"type":"epoch"...} events; returns the summary.
  // Throws E_CANCELLED when `cancel` becomes true (checked between micro-batches).
  Json train(const TrainOptions& options, const std::atomic<bool>& cancel, const Emit& emit);
  // Memory by kind that train(options) would use at options.batch_size, from the model's shapes
  // and the training data's record size, without allocating (needs the training data).
  MemoryBreakdown predict_memory(const TrainOptions& options) const;
  // Evaluates on the CPU with the host model's parameters.
  EvalResult evaluate(const std::string& split, int batch_size, const std::atomic<bool>& cancel);

 private:
  // The phases of train(): its preconditions, the loader's settings, and one optimizer step.
  void check_run(const TrainOptions& options) const;
  LoaderOptions loader_options(const TrainOptions& options) const;
  void run_step(StepBackend& backend, Loader& loader, RunTally& tally, const TrainOptions& options, const StepPlan& plan,
                int epoch, std::int64_t s, std::int64_t step, const std::atomic<bool>& cancel);
  std::unique_ptr<StepBackend> make_backend(const TrainOptions& options);
  EvalResult evaluate_with(StepBackend& backend, const std::string& split, int batch_size, const std::atomic<bool>& cancel);
  void check_data(const RecordSource& data, const std::string& split);
  std::vector<std::string> needed_fields(const RecordSource& data) const;
  bool classifies() const;

  ThreadPool pool_;
  std::uint64_t seed_;
  Model model_;
  std::shared_ptr<RecordSource> train_, test_;
};

}  // namespace tb
