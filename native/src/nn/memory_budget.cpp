#include "nn/memory_budget.h"

#include <atomic>
#include <string>

#include "core/errors.h"

namespace tb {
namespace {
std::atomic<std::int64_t> g_charged{0};
}

void MemoryBudget::charge(std::int64_t bytes, const char* what) {
  if (limit_ > 0 && live_ + bytes > limit_) {
    TB_THROW(ErrorCode::OOM, "out of memory under the CPU memory limit: " + std::string(what) + " requested " +
                                 std::to_string(bytes) + " bytes, " + std::to_string(limit_ - live_) + " free of " +
                                 std::to_string(limit_) + " (" + std::to_string(live_) +
                                 " allocated by Trainbench); use a smaller batch or a larger memoryLimitBytes");
  }
  live_ += bytes;
  if (live_ > peak_) peak_ = live_;
  g_charged += bytes;
}

void MemoryBudget::release(std::int64_t bytes) {
  live_ -= bytes;
  g_charged -= bytes;
}

void MemoryCharge::attach(MemoryBudget* budget, std::int64_t bytes, const char* what) {
  if (budget == budget_) {
    if (bytes > bytes_ && budget) budget->charge(bytes - bytes_, what);
    if (bytes < bytes_ && budget) budget->release(bytes_ - bytes);
  } else {
    if (budget) budget->charge(bytes, what);
    reset();
    budget_ = budget;
  }
  bytes_ = budget ? bytes : 0;
}

void MemoryCharge::reset() {
  if (budget_) budget_->release(bytes_);
  budget_ = nullptr;
  bytes_ = 0;
}

std::int64_t engine_charged_bytes() { return g_charged.load(); }

}  // namespace tb
