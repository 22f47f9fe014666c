#include "core/threads.h"

#include <algorithm>

namespace tb {

int hardware_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int threads) {
  const int total = threads <= 0 ? hardware_threads() : threads;
  for (int i = 1; i < total; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

static void chunk_range(std::int64_t n, int chunks, int i, std::int64_t* b, std::int64_t* e) {
  const std::int64_t base = n / chunks, extra = n % chunks;
  *b = i * base + std::min<std::int64_t>(i, extra);
  *e = *b + base + (i < extra ? 1 : 0);
}

void ThreadPool::worker_loop(int index) {
  std::uint64_t seen = 0;
  for (;;) {
    const std::function<void(std::int64_t, std::int64_t, int)>* job;
    std::int64_t n;
    int chunks;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
      chunks = job_chunks_;
    }
    if (index < chunks) {
      std::int64_t b, e;
      chunk_range(n, chunks, index, &b, &e);
      if (b < e) (*job)(b, e, index);
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(std::int64_t n, const std::function<void(std::int64_t, std::int64_t, int)>& fn,
                              std::int64_t min_chunk) {
  if (n <= 0) return;
  const std::int64_t by_size = std::max<std::int64_t>(1, n / std::max<std::int64_t>(1, min_chunk));
  const int chunks = static_cast<int>(std::min<std::int64_t>(size(), by_size));
  if (chunks <= 1 || workers_.empty()) {
    fn(0, n, 0);
    return;
  }
  std::lock_guard<std::mutex> run(run_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    job_chunks_ = chunks;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  std::int64_t b, e;
  chunk_range(n, chunks, 0, &b, &e);
  // An exception in chunk 0 must still wait for the workers, which use `fn`.
  std::exception_ptr error;
  try {
    fn(b, e, 0);
  } catch (...) {
    error = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  if (error) std::rethrow_exception(error);
}

}  // namespace tb
