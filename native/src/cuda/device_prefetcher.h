// GPU prefetch: batches from the loader are staged in pinned memory and copied
// on a separate stream into a ring of device buffers (depth 3 by default), so
// copies overlap compute. Ordering is by events only: the compute stream waits
// for a slot's copy, the copy stream waits for compute to release the slot, and
// the host blocks only if copies fall a whole ring behind.
#pragma once
#include <cuda_runtime.h>

#include <deque>
#include <optional>
#include <vector>

#include "cuda/allocator.h"
#include "data/host_buffer.h"
#include "data/loader.h"

namespace tb {

struct DeviceBatch {
  int size = 0;
  int slot = -1;
  std::vector<void*> fields;  // device pointers, one per loaded field, records packed (compact dtypes)
  double gather_seconds = 0;  // the loader's assembly time of this batch
};

class DevicePrefetcher {
 public:
  DevicePrefetcher(Loader& loader, int device, int depth, cudaStream_t compute);
  ~DevicePrefetcher();
  DevicePrefetcher(const DevicePrefetcher&) = delete;
  DevicePrefetcher& operator=(const DevicePrefetcher&) = delete;

  // Call after loader.start_epoch(); queues the first copies. The ring (pinned staging, device slots)
  // is kept from epoch to epoch: only a different loader needs a new one.
  void start_epoch();
  // Whether this ring was built for `loader` (same object, not a later one at the same address).
  bool bound_to(const Loader& loader) const { return &loader == &loader_ && loader.serial() == loader_serial_; }
  // The next batch on the device, with the compute stream already ordered after its copy; empty at epoch end.
  // A copy, not a view of the slot: release() refills the slot (size and all), so a view read after
  // release would describe a later batch.
  std::optional<DeviceBatch> next();
  // Marks the slot reusable once the compute stream reaches this point (call after enqueueing the work
  // that reads it) and starts the next copy into it; the batch's device memory must not be read after.
  void release(const DeviceBatch& batch);
  // Device bytes of the ring.
  std::int64_t device_bytes() const;

 private:
  struct Slot {
    std::vector<DeviceBuffer> device;
    std::vector<HostBuffer> staging;
    cudaEvent_t copied = nullptr, consumed = nullptr;
    DeviceBatch batch;
  };
  bool issue();

  Loader& loader_;
  std::uint64_t loader_serial_;
  int device_;
  cudaStream_t compute_, copy_ = nullptr;
  std::vector<Slot> slots_;
  std::deque<int> queued_;
  std::int64_t issued_ = 0;
  bool loader_done_ = false;
};

}  // namespace tb
