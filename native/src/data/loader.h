// The loader pipeline: a seeded shuffle of record indices, an optional
// sample_ratio, and N worker threads that gather batches into a ring of
// `prefetch` buffers ahead of the consumer. Batches come out in order, so the
// same seed gives the same stream for any worker count or prefetch depth.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "data/host_buffer.h"
#include "data/record_source.h"

namespace tb {

struct LoaderOptions {
  int batch_size = 64;
  int workers = 1;   // 0: gather in the consumer's own thread
  int prefetch = 2;  // batches buffered ahead of the consumer
  bool shuffle = true;
  std::uint64_t seed = 0;
  double sample_ratio = 1.0;  // fraction of the records drawn each epoch
  bool drop_last = true;
  std::vector<std::string> fields;  // fields to load; empty loads all
  bool pinned = false;  // page-locked batch buffers (only takes effect with a CUDA device)
};

struct Batch {
  std::int64_t number = -1;
  int size = 0;
  std::vector<std::int64_t> records;            // source record indices, in batch order
  std::vector<HostBuffer> data;                 // per loaded field: `size` records packed
  double gather_seconds = 0;                    // time a worker spent assembling it
};

class Loader {
 public:
  Loader(std::shared_ptr<const RecordSource> source, LoaderOptions options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  const RecordSource& source() const { return *source_; }
  // Index into Batch::data of a loaded field, or -1.
  int slot_of(const std::string& field) const;
  const FieldInfo& loaded_field(int slot) const { return source_->fields()[static_cast<size_t>(field_ids_[static_cast<size_t>(slot)])]; }
  std::int64_t records_per_epoch() const { return drawn_; }
  std::int64_t batches_per_epoch() const;

  // Starts (or restarts) producing the batches of `epoch`; abandons the rest of the previous one.
  void start_epoch(int epoch);
  // The next batch of the epoch, or nullptr at its end. Blocks while it is not ready;
  // the pointer stays valid until the next call. Rethrows a worker's error.
  const Batch* next();
  // Whether the batch buffers ended up page-locked.
  bool pinned() const;
  const LoaderOptions& options() const { return opt_; }
  // Unique per Loader ever made in this process: tells a consumer bound to an earlier loader at the
  // same address (a stack loader of a later evaluation) from this one.
  std::uint64_t serial() const { return serial_; }
  // Bytes of the batch buffers (one per prefetch slot).
  std::int64_t buffer_bytes() const;
  // Seconds the consumer spent blocked in next() since construction.
  double waited_seconds() const { return waited_; }

  // The record order of an epoch: a seeded Fisher-Yates shuffle, then the first ceil(ratio * n).
  static std::vector<std::int64_t> epoch_order(std::int64_t n, std::uint64_t seed, int epoch, bool shuffle, double ratio);

 private:
  enum class SlotState { Free, Filling, Ready };
  struct Slot {
    SlotState state = SlotState::Free;
    std::uint64_t generation = 0;
    Batch batch;
    std::exception_ptr error;
  };

  void claim_records(Batch& batch, std::int64_t number);
  void fill(Batch& batch);
  void worker_loop();

  std::shared_ptr<const RecordSource> source_;
  LoaderOptions opt_;
  std::vector<int> field_ids_;
  std::int64_t drawn_ = 0;
  std::uint64_t serial_ = 0;
  std::vector<std::int64_t> order_;

  std::mutex mutex_;
  std::condition_variable work_cv_, ready_cv_;
  std::vector<Slot> slots_;
  std::vector<std::thread> workers_;
  std::uint64_t generation_ = 0;
  std::int64_t next_claim_ = 0, next_consume_ = 0, batches_ = 0;
  bool holding_ = false;  // the consumer holds slot (next_consume_ - 1)
  bool stop_ = false;
  double waited_ = 0;
};

}  // namespace tb
