// The CPU backend's allocator accounting: every training buffer is charged to a
// budget before it is allocated, so a memory limit (--memory-limit) makes the
// CPU run out of memory exactly where a GPU of that size would: a typed E_OOM
// with the bytes requested and free, thrown before the memory is touched.
#pragma once
#include <cstdint>

namespace tb {

class MemoryBudget {
 public:
  // limit_bytes 0: no limit (still counted, so the live bytes stay observable).
  explicit MemoryBudget(std::int64_t limit_bytes = 0) : limit_(limit_bytes) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Throws E_OOM naming `what` when `bytes` more would exceed the limit; nothing is counted then.
  void charge(std::int64_t bytes, const char* what);
  void release(std::int64_t bytes);
  std::int64_t live() const { return live_; }
  std::int64_t peak() const { return peak_; }
  std::int64_t limit() const { return limit_; }

 private:
  std::int64_t limit_;
  std::int64_t live_ = 0, peak_ = 0;
};

// Bytes one buffer holds against a budget; gives them back when resized down or destroyed.
class MemoryCharge {
 public:
  MemoryCharge() = default;
  MemoryCharge(MemoryBudget* budget, std::int64_t bytes, const char* what) { attach(budget, bytes, what); }
  ~MemoryCharge() { reset(); }
  MemoryCharge(const MemoryCharge&) = delete;
  MemoryCharge& operator=(const MemoryCharge&) = delete;

  // Moves the charge to `budget` at `bytes` (throws E_OOM, leaving the old charge, when it does not fit).
  void attach(MemoryBudget* budget, std::int64_t bytes, const char* what);
  void reset();
  std::int64_t bytes() const { return bytes_; }

 private:
  MemoryBudget* budget_ = nullptr;
  std::int64_t bytes_ = 0;
};

// Bytes charged to every budget in this process now: back at its baseline once a run has ended,
// however it ended (the batch-size search checks this after each out-of-memory trial).
std::int64_t engine_charged_bytes();

}  // namespace tb
