// Model specs: the JSON the TypeScript zod schema produces, validated again
// here so the engine never trusts its caller. Every size is a parameter.
#pragma once
#include <string>
#include <vector>

#include "core/json.h"

namespace tb {

enum class Task { Classification, Regression };

struct MlpSpec {
  std::vector<int> hidden;  // widths of the hidden layers
  double dropout = 0;
};

struct CnnSpec {
  std::vector<int> channels;  // one conv (+BN) + ReLU per entry
  std::vector<int> strides;
  int kernel = 3;
  bool batch_norm = true;
  int hidden = 0;  // width of a linear layer after flattening; 0 for none
  double dropout = 0;
};

struct ResnetSpec {
  int stem_width = 24;
  std::vector<int> layers{2, 2, 2, 1};
  std::vector<int> strides{1, 2, 2, 2};
  std::vector<int> widths{24, 48, 96, 144};
  int expansion = 4;
  int head_channels = 128;
  int policy_classes = 1496;
};

struct ModelSpec {
  std::string family;      // "mlp", "cnn", "bottleneck_resnet"
  std::vector<int> input;  // per-sample input shape: [C, H, W], or [D] for an mlp
  Task task = Task::Classification;
  int outputs = 0;  // classes, or regression outputs (mlp, cnn)
  MlpSpec mlp;
  CnnSpec cnn;
  ResnetSpec resnet;
  Json source;  // the spec as given, stored in checkpoints
};

// Throws E_BAD_INPUT naming the field and the bad value ("spec.hidden[1] must be a positive integer, got -3").
ModelSpec parse_model_spec(const Json& json);

}  // namespace tb
