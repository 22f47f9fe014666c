#include "cuda/op_profile.h"

#include <algorithm>

#include "cuda/cuda_check.h"

namespace tb::cuda {

OpProfile::~OpProfile() {
  for (cudaEvent_t e : free_) cudaEventDestroy(e);
  for (const Span& s : spans_) cudaEventDestroy(s.from), cudaEventDestroy(s.to);
  if (open_) cudaEventDestroy(open_);
}

cudaEvent_t OpProfile::take() {
  if (!free_.empty()) {
    cudaEvent_t e = free_.back();
    free_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  TB_CUDA_CHECK(cudaEventCreate(&e));
  return e;
}

void OpProfile::begin() {
  open_ = take();
  TB_CUDA_CHECK(cudaEventRecord(open_, stream_));
}

void OpProfile::end(const std::string& op) {
  if (!open_) return;
  cudaEvent_t e = take();
  TB_CUDA_CHECK(cudaEventRecord(e, stream_));
  spans_.push_back({op, open_, e});
  open_ = nullptr;
}

void OpProfile::collect() {
  for (const Span& s : spans_) {
    float ms = 0;
    TB_CUDA_CHECK(cudaEventElapsedTime(&ms, s.from, s.to));
    ms_[s.op] += ms;
    free_.push_back(s.from);
    free_.push_back(s.to);
  }
  spans_.clear();
}

Json OpProfile::report() const {
  std::vector<std::pair<std::string, double>> rows(ms_.begin(), ms_.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  double total = 0;
  for (const auto& r : rows) total += r.second;
  Json out = Json::array();
  for (const auto& r : rows) {
    Json j = Json::object();
    j.set("op", r.first);
    j.set("ms", r.second);
    j.set("share", total > 0 ? r.second / total : 0.0);
    out.push(j);
  }
  return out;
}

}  // namespace tb::cuda
