#include "data/loader.h"

#include <atomic>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "core/errors.h"
#include "core/rng.h"

namespace tb {

using Clock = std::chrono::steady_clock;

std::vector<std::int64_t> Loader::epoch_order(std::int64_t n, std::uint64_t seed, int epoch, bool shuffle, double ratio) {
  std::vector<std::int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (shuffle) {
    Rng rng = Rng::derive(seed, 0x5100 + static_cast<std::uint64_t>(epoch));
    for (std::int64_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng.below(static_cast<std::uint64_t>(i + 1))]);
  }
  const std::int64_t drawn = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(ratio * static_cast<double>(n))));
  order.resize(static_cast<size_t>(std::min(n, drawn)));
  return order;
}

Loader::Loader(std::shared_ptr<const RecordSource> source, LoaderOptions options)
    : source_(std::move(source)), opt_(std::move(options)) {
  static std::atomic<std::uint64_t> next_serial{1};
  serial_ = next_serial.fetch_add(1);
  if (opt_.batch_size < 1) TB_THROW(ErrorCode::BadInput, "loader batch size must be at least 1, got " + std::to_string(opt_.batch_size));
  if (opt_.workers < 0 || opt_.workers > 256) TB_THROW(ErrorCode::BadInput, "loader workers must be 0 to 256, got " + std::to_string(opt_.workers));
  if (opt_.prefetch < 1 || opt_.prefetch > 256) TB_THROW(ErrorCode::BadInput, "prefetch depth must be 1 to 256, got " + std::to_string(opt_.prefetch));
  if (!(opt_.sample_ratio > 0.0 && opt_.sample_ratio <= 1.0))
    TB_THROW(ErrorCode::BadInput, "sample ratio must be in (0, 1], got " + std::to_string(opt_.sample_ratio));
  if (opt_.fields.empty())
    for (const auto& f : source_->fields()) opt_.fields.push_back(f.name);
  for (const auto& name : opt_.fields) {
    source_->field(name);  // throws naming a missing field
    field_ids_.push_back(source_->field_index(name));
  }
  const std::int64_t n = source_->count();
  drawn_ = std::min(n, std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(opt_.sample_ratio * static_cast<double>(n)))));
  slots_.resize(static_cast<size_t>(opt_.workers == 0 ? 1 : opt_.prefetch));
  for (auto& s : slots_) {
    for (size_t f = 0; f < field_ids_.size(); ++f)
      s.batch.data.emplace_back(static_cast<size_t>(opt_.batch_size * loaded_field(static_cast<int>(f)).record_bytes()), opt_.pinned);
    s.batch.records.reserve(static_cast<size_t>(opt_.batch_size));
  }
  for (int w = 0; w < opt_.workers; ++w) workers_.emplace_back([this] { worker_loop(); });
}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  ready_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

int Loader::slot_of(const std::string& field) const {
  for (size_t i = 0; i < opt_.fields.size(); ++i)
    if (opt_.fields[i] == field) return static_cast<int>(i);
  return -1;
}

bool Loader::pinned() const {
  for (const auto& s : slots_)
    for (const auto& d : s.batch.data)
      if (!d.pinned()) return false;
  return !slots_.empty();
}

std::int64_t Loader::buffer_bytes() const {
  std::int64_t bytes = 0;
  for (const auto& s : slots_)
    for (const auto& d : s.batch.data) bytes += static_cast<std::int64_t>(d.size());
  return bytes;
}

std::int64_t Loader::batches_per_epoch() const {
  return opt_.drop_last ? drawn_ / opt_.batch_size : (drawn_ + opt_.batch_size - 1) / opt_.batch_size;
}

// Takes the batch's record indices from the epoch order; the caller holds the lock
// (start_epoch replaces order_).
void Loader::claim_records(Batch& batch, std::int64_t number) {
  const std::int64_t begin = number * opt_.batch_size;
  const int n = static_cast<int>(std::min<std::int64_t>(opt_.batch_size, drawn_ - begin));
  batch.number = number;
  batch.size = n;
  batch.records.assign(order_.begin() + begin, order_.begin() + begin + n);
}

// Gathers the claimed records; runs without the lock.
void Loader::fill(Batch& batch) {
  const auto t0 = Clock::now();
  for (size_t f = 0; f < field_ids_.size(); ++f) source_->read(field_ids_[f], batch.records.data(), batch.size, batch.data[f].data());
  batch.gather_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
}

void Loader::start_epoch(int epoch) {
  std::vector<std::int64_t> order = epoch_order(source_->count(), opt_.seed, epoch, opt_.shuffle, opt_.sample_ratio);
  std::lock_guard<std::mutex> lock(mutex_);
  ++generation_;
  order_ = std::move(order);
  batches_ = batches_per_epoch();
  next_claim_ = next_consume_ = 0;
  holding_ = false;
  // Slots still being filled for the old epoch are discarded when their worker finishes.
  for (auto& s : slots_)
    if (s.state == SlotState::Ready) s.state = SlotState::Free;
  work_cv_.notify_all();
}

void Loader::worker_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    const auto P = static_cast<std::int64_t>(slots_.size());
    work_cv_.wait(lock, [&] {
      return stop_ || (next_claim_ < batches_ && next_claim_ < next_consume_ + P - (holding_ ? 1 : 0) &&
                       slots_[static_cast<size_t>(next_claim_ % P)].state == SlotState::Free);
    });
    if (stop_) return;
    const std::int64_t number = next_claim_++;
    Slot& slot = slots_[static_cast<size_t>(number % P)];
    slot.state = SlotState::Filling;
    const std::uint64_t gen = generation_;
    claim_records(slot.batch, number);
    lock.unlock();
    std::exception_ptr error;
    try {
      fill(slot.batch);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (gen != generation_) {
      slot.state = SlotState::Free;  // a batch of an abandoned epoch
      work_cv_.notify_all();
      continue;
    }
    slot.error = error;
    slot.generation = gen;
    slot.state = SlotState::Ready;
    ready_cv_.notify_all();
  }
}

const Batch* Loader::next() {
  if (opt_.workers == 0) {
    if (next_consume_ >= batches_) return nullptr;
    claim_records(slots_[0].batch, next_consume_++);
    fill(slots_[0].batch);
    waited_ += slots_[0].batch.gather_seconds;  // with no workers the consumer waits for every gather
    return &slots_[0].batch;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  const auto P = static_cast<std::int64_t>(slots_.size());
  if (holding_) {
    slots_[static_cast<size_t>((next_consume_ - 1) % P)].state = SlotState::Free;
    holding_ = false;
    work_cv_.notify_all();
  }
  if (next_consume_ >= batches_) return nullptr;
  Slot& slot = slots_[static_cast<size_t>(next_consume_ % P)];
  const auto t0 = Clock::now();
  ready_cv_.wait(lock, [&] {
    return stop_ || (slot.state == SlotState::Ready && slot.generation == generation_ && slot.batch.number == next_consume_);
  });
  waited_ += std::chrono::duration<double>(Clock::now() - t0).count();
  if (stop_) TB_THROW(ErrorCode::Cancelled, "the loader was stopped");
  ++next_consume_;
  holding_ = true;
  if (slot.error) {
    std::exception_ptr e = slot.error;
    slot.error = nullptr;
    std::rethrow_exception(e);
  }
  return &slot.batch;
}

}  // namespace tb
