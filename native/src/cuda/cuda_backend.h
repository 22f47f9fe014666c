// The CUDA backend of the training loop (cuda_backend.cu): the same steps as
// the CPU backend, on one device, in fp32 or mixed precision.
#pragma once
#include <cstdint>
#include <memory>

#include "nn/model.h"
#include "train/step_backend.h"
#include "train/trainer.h"

namespace tb {

// Uploads the model's parameters to cuda:`device`; throws E_CUDA when the build has no CUDA backend.
std::unique_ptr<StepBackend> make_cuda_backend(Model& model, int device, const TrainOptions& options, std::uint64_t seed);

}  // namespace tb
