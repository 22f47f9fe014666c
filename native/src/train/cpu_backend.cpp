#include "train/cpu_backend.h"

#include <algorithm>

#include "core/errors.h"

namespace tb {

const char* const kPhaseNames[kPhaseCount] = {"data", "h2d", "forward", "loss", "backward", "optimizer"};

CpuBackend::CpuBackend(Model& model, ThreadPool& pool, std::uint64_t seed, const OptimizerOptions* optimizer)
    : model_(model), pool_(pool), dropout_rng_(Rng::derive(seed, 0xD50)) {
  if (optimizer) optimizer_ = std::make_unique<Optimizer>(*optimizer, model.param_count());
  pending_.head_sums.assign(model.heads().size(), 0.0);
}

Json CpuBackend::describe() const {
  Json d = Json::object();
  d.set("device", "cpu");
  d.set("precision", "fp32");
  d.set("threads", pool_.size());
  d.set("timing", "steady clock around each phase (the CPU runs them one after another, so timing does not perturb the step)");
  return d;
}

void CpuBackend::add_time(Phase p, Clock::time_point since) {
  pending_.phase_seconds[p] += std::chrono::duration<double>(Clock::now() - since).count();
}

void CpuBackend::start_epoch(Loader& loader, int epoch) {
  loader_ = &loader;
  loader.start_epoch(epoch);
}

const float* CpuBackend::widen_field(const std::string& name, std::vector<float>& buf) {
  const int slot = loader_->slot_of(name);
  const FieldInfo& f = loader_->loaded_field(slot);
  const std::int64_t n = batch_->size * f.record_values();
  buf.resize(static_cast<size_t>(n));
  widen_to_float(f.dtype, batch_->data[static_cast<size_t>(slot)].data(), n, buf.data(), f.scale, f.offset);
  return buf.data();
}

bool CpuBackend::next_batch(Loader& loader) {
  const auto t = Clock::now();
  loader_ = &loader;
  batch_ = loader.next();
  if (batch_) widen_field("x", x_);
  add_time(kData, t);
  return batch_ != nullptr;
}

void CpuBackend::forward(bool train) {
  const auto t = Clock::now();
  model_.forward(x_.data(), batch_->size, train, train ? &dropout_rng_ : nullptr, &pool_);
  add_time(kForward, t);
}

void CpuBackend::losses(double grad_scale, bool want_grad) {
  const auto t = Clock::now();
  const int B = batch_->size;
  double total = 0;
  std::int64_t* correct = &pending_.correct;
  for (size_t hi = 0; hi < model_.heads().size(); ++hi) {
    const Head& h = model_.heads()[hi];
    const int K = static_cast<int>(model_.nodes()[h.node].dims.size());
    const float* out = model_.output(h);
    float* d = want_grad ? model_.output_grad(h) : nullptr;
    const double scale = grad_scale * h.weight;
    double loss = 0;
    switch (h.loss) {
      case LossKind::SoftmaxCE: {
        const int slot = loader_->slot_of(h.target);
        labels_.resize(B);
        widen_to_int32(loader_->loaded_field(slot).dtype, batch_->data[static_cast<size_t>(slot)].data(), B, labels_.data());
        loss = softmax_ce_forward_backward(d, out, labels_.data(), B, K, scale, correct);
        break;
      }
      case LossKind::SoftmaxCESoft: {
        const float* tg = widen_field(h.target, targets_);
        const float* mask = loader_->slot_of(h.target + "_mask") >= 0 ? widen_field(h.target + "_mask", mask_) : nullptr;
        loss = softmax_ce_soft_forward_backward(d, out, tg, mask, B, K, scale);
        // Accuracy of a soft-target head: the top prediction agrees with the target's top class.
        for (int b = 0; b < B; ++b) {
          if (mask && mask[b] == 0.0f) continue;
          const float* o = out + static_cast<std::int64_t>(b) * K;
          const float* tt = tg + static_cast<std::int64_t>(b) * K;
          *correct += std::max_element(o, o + K) - o == std::max_element(tt, tt + K) - tt;
        }
        break;
      }
      case LossKind::BceLogits:
        loss = bce_logits_forward_backward(d, out, widen_field(h.target, targets_), B, scale);
        break;
      case LossKind::Mse:
        loss = mse_forward_backward(d, out, widen_field(h.target, targets_), static_cast<std::int64_t>(B) * K, scale);
        break;
    }
    pending_.head_sums[hi] += loss * B;
    total += h.weight * loss;
  }
  pending_.loss_sum += total;
  pending_.micro_batches += 1;
  add_time(kLoss, t);
}

void CpuBackend::backward() {
  const auto t = Clock::now();
  model_.backward(&pool_);
  add_time(kBackward, t);
}

void CpuBackend::optimizer_step(double clip_norm) {
  const auto t = Clock::now();
  pending_.grad_norm = clip_grad_norm(model_.grads().data(), model_.param_count(), clip_norm);
  optimizer_->step(model_.params().data(), model_.grads().data(), lr_, &pool_);
  add_time(kOptimizer, t);
}

StepReadout CpuBackend::readout() {
  StepReadout r = pending_;
  pending_ = StepReadout{};
  pending_.head_sums.assign(model_.heads().size(), 0.0);
  pending_.grad_norm = r.grad_norm;
  return r;
}

MemoryBreakdown CpuBackend::measured_memory(const Loader& loader) const {
  return measure_memory(model_, optimizer_ ? optimizer_->state_bytes() : 0, loader.buffer_bytes(),
                        static_cast<std::int64_t>(x_.size() * sizeof(float)));
}

}  // namespace tb
