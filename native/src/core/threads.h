// A fixed pool of worker threads with a static-partition parallel_for.
// Static partitioning keeps every reduction in the same order for a given
// thread count, which is what makes seeded runs reproducible bit for bit.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tb {

class ThreadPool {
 public:
  // threads <= 0 means all logical cores.
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end, worker) on `size()` contiguous chunks of [0, n);
  // the calling thread runs chunk 0. Chunks smaller than min_chunk are merged.
  void parallel_for(std::int64_t n, const std::function<void(std::int64_t, std::int64_t, int)>& fn,
                    std::int64_t min_chunk = 1);

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(std::int64_t, std::int64_t, int)>* job_ = nullptr;
  std::int64_t job_n_ = 0;
  int job_chunks_ = 0;
  // Workers and the caller spin briefly on these before sleeping on the condition variables: a
  // step's passes come microseconds apart, and a sleeping worker took ~6 us to wake per pass.
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  bool stopping_ = false;
  std::mutex run_mutex_;  // one parallel_for at a time
};

int hardware_threads();

}  // namespace tb
