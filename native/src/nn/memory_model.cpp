#include "nn/memory_model.h"

#include <algorithm>

namespace tb {

std::int64_t MemoryBreakdown::total() const {
  return weights + gradients + optimizer_state + activations + activation_grads + batch_data + workspace;
}

Json MemoryBreakdown::to_json() const {
  Json j = Json::object();
  j.set("weights", weights);
  j.set("gradients", gradients);
  j.set("optimizerState", optimizer_state);
  j.set("activations", activations);
  j.set("activationGrads", activation_grads);
  j.set("batchData", batch_data);
  j.set("workspace", workspace);
  j.set("total", total());
  return j;
}

MemoryBreakdown predict_memory(const Model& model, int batch, bool adamw, std::int64_t record_bytes, int slots) {
  MemoryBreakdown m;
  const std::int64_t f = sizeof(float);
  std::int64_t buffers = 0;
  for (const ParamEntry& e : model.entries())
    if (e.is_buffer()) buffers += e.size();
  m.weights = (model.param_count() + buffers) * f;
  m.gradients = model.param_count() * f;
  m.optimizer_state = model.param_count() * f * (adamw ? 2 : 1);
  for (const Node& n : model.nodes()) {
    const std::int64_t values = static_cast<std::int64_t>(batch) * n.dims.size();
    // Activations and their gradients carry the convolution kernels' slack (Model::forward).
    m.activations += (values + kConvRowSlack) * f;
    m.activation_grads += (values + kConvRowSlack) * f;
    if (n.kind == NodeKind::Dropout) m.activations += values * f;          // the mask
    if (n.kind == NodeKind::BatchNorm) m.activations += 2 * n.dims.c * f;  // saved mean and 1/std
    if (n.kind == NodeKind::Conv) {
      ConvGeom g = n.geom;
      g.N = batch;
      m.workspace += conv_workspace_floats(g) * f;
    }
  }
  m.batch_data = record_bytes * batch * slots + static_cast<std::int64_t>(batch) * model.input_dims().size() * f;
  return m;
}

MemoryBreakdown measure_memory(const Model& model, std::int64_t optimizer_bytes, std::int64_t loader_bytes, std::int64_t input_bytes) {
  MemoryBreakdown m;
  const std::int64_t f = sizeof(float);
  m.weights = static_cast<std::int64_t>(model.params().size() + const_cast<Model&>(model).buffers().size()) * f;
  m.gradients = static_cast<std::int64_t>(const_cast<Model&>(model).grads().size()) * f;
  m.optimizer_state = optimizer_bytes;
  for (const Node& n : model.nodes()) {
    m.activations += static_cast<std::int64_t>(n.out.size() + n.mask.size() + n.save_mean.size() + n.save_invstd.size()) * f;
    m.activation_grads += static_cast<std::int64_t>(n.grad.size()) * f;
    m.workspace += static_cast<std::int64_t>(n.ws.col.size()) * f;
  }
  m.batch_data = loader_bytes + input_bytes;
  return m;
}

}  // namespace tb
