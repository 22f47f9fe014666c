// Where training memory goes, by kind: predicted from the model's shapes and the
// training settings, and measured from what the engine actually allocated.
// The batch-size search uses the prediction; the report shows both.
#pragma once
#include <cstdint>

#include "core/json.h"
#include "nn/model.h"

namespace tb {

struct MemoryBreakdown {
  std::int64_t weights = 0;           // parameters and running statistics
  std::int64_t gradients = 0;         // parameter gradients
  std::int64_t optimizer_state = 0;   // momentum (SGD) or two moments (AdamW)
  std::int64_t activations = 0;       // every node's output, kept for backward
  std::int64_t activation_grads = 0;  // gradients flowing back through the nodes
  std::int64_t batch_data = 0;        // loader slots (compact) and the widened input batch
  std::int64_t workspace = 0;         // the convolutions' packed weights and partial sums
  std::int64_t total() const;
  Json to_json() const;
};

// `record_bytes`: compact bytes of one record of the loaded fields; `slots`: batches the loader holds.
MemoryBreakdown predict_memory(const Model& model, int batch, bool adamw, std::int64_t record_bytes, int slots);
// What is allocated now (after at least one step at `batch`), optimizer and loader included by the caller.
MemoryBreakdown measure_memory(const Model& model, std::int64_t optimizer_bytes, std::int64_t loader_bytes, std::int64_t input_bytes);

}  // namespace tb
