// Checkpoints as safetensors (https://github.com/huggingface/safetensors), so
// PyTorch can load them: an 8-byte little-endian header length, a JSON header
// naming each tensor's dtype, shape and byte range, then the raw data.
#pragma once
#include <string>

#include "core/json.h"
#include "nn/model.h"

namespace tb {

// Writes every parameter and running statistic as F32, plus metadata (the
// model spec as JSON). Written to a temporary file and renamed into place.
void save_checkpoint(const Model& model, const std::string& path, const Json& metadata);

// Loads tensors by name into the model; throws E_DATA naming the file and the
// problem (truncated, bad header, missing tensor, shape mismatch).
Json load_checkpoint(Model& model, const std::string& path);

}  // namespace tb
