#include "core/threads.h"

#include <algorithm>
#include <chrono>
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

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

namespace {

// How long a worker waiting for the next pass, or the caller waiting for the workers, spins before
// it sleeps: long enough to bridge the gaps inside a training step, short enough that an idle pool
// gives its cores back (the loader and the host share them). Against not spinning (2 threads,
// bench/cpu/ab-addon.mjs): mlp 1.16x, board 1.13x. The price: work on the host that takes a core
// for milliseconds now slows the steps it lands in more, so benchmarks start the telemetry
// samplers before the first repetition (TelemetryService.hold).
constexpr auto kSpin = std::chrono::microseconds(50);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(_M_X64)
  _mm_pause();
#endif
}

// Spins until done() or kSpin has passed; returns done().
template <typename F>
bool spin_until(F&& done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (done()) return true;
    cpu_relax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= until) return done();
  }
}

}  // namespace

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
    spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_.load(std::memory_order_relaxed) != seen; });
      if (stopping_) return;
      seen = generation_.load(std::memory_order_relaxed);
      job = job_;
      n = job_n_;
      chunks = job_chunks_;
    }
    if (index < chunks) {
      std::int64_t b, e;
      chunk_range(n, chunks, index, &b, &e);
      if (b < e) (*job)(b, e, index);
    }
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // The caller may be asleep: notify under the mutex so the wake-up cannot be lost.
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_one();
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
    pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
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
  spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; });
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
  job_ = nullptr;
  if (error) std::rethrow_exception(error);
}

}  // namespace tb
