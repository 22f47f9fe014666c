// Host-side rules of the CUDA runtime pieces, compiled without CUDA by
// test/native/cuda-host.test.ts: the allocator's stream-ordered reuse
// (block_cache.h), what readout() clears, and what the dropout masks depend on.
//   runtime_rules <check>   prints what it found; exit 0 when the rule holds
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "cuda/block_cache.h"
#include "cuda/train_state.h"

using namespace tb;

namespace {

// Stand-ins for streams and events: any distinct addresses.
char stream_a, stream_b, event_pending, event_done;
void* const A = &stream_a;
void* const B = &stream_b;
bool done(void* e) { return e == &event_done; }

bool expect(bool ok, const char* what) {
  std::printf("%s: %s\n", what, ok ? "yes" : "NO");
  return ok;
}

bool block_cache_stream_order() {
  char mem[4];
  bool ok = true;
  BlockCache cache;
  cache.put({1024, &mem[0], A, &event_pending});
  ok &= expect(!cache.take(1024, B, done), "a block freed on A with work pending is not handed to B");
  ok &= expect(cache.count() == 1, "it stays cached");
  auto same = cache.take(1024, A, done);
  ok &= expect(same && same->ptr == &mem[0], "A itself gets it back at once");
  cache.put({1024, &mem[1], A, &event_done});
  auto other = cache.take(1024, B, done);
  ok &= expect(other && other->ptr == &mem[1], "B gets it once A's free event has completed");
  cache.put({1024, &mem[2], A, nullptr});
  ok &= expect(!cache.take(1024, B, done), "without a free event (freed inside a capture) only A may reuse it");
  ok &= expect(cache.take(1024, A, done).has_value(), "and A may");
  return ok;
}

bool block_cache_best_fit() {
  char mem[4];
  bool ok = true;
  BlockCache cache;
  cache.put({4096, &mem[0], A, &event_done});
  cache.put({2048, &mem[1], A, &event_done});
  cache.put({1536, &mem[2], A, &event_pending});
  auto b = cache.take(1024, B, done);
  ok &= expect(b && b->ptr == &mem[1], "the smallest usable block that fits, skipping a smaller one still in use");
  ok &= expect(!cache.take(1024, B, done), "never more than twice the request (4096 for 1024)");
  ok &= expect(!cache.take(8192, A, done), "never smaller than the request");
  int drained = 0;
  cache.drain([&](const BlockCache::Block&) { ++drained; });
  ok &= expect(drained == 2 && cache.count() == 0, "drain hands back every block");
  return ok;
}

bool readout_reset_keeps_state() {
  cuda::TrainState s;
  s.loss_sum = 2.5;
  s.micro_batches = 4;
  s.correct = 9;
  s.skipped = 1;
  for (double& h : s.head_sums) h = 1;
  s.scale.scale = 512;
  s.scale.good_steps = 3;
  s.adam_t = 11;
  s.grad_norm = 0.7;
  s.lr = 0.1f;
  cuda::reset_readout_sums(s);
  bool ok = expect(s.loss_sum == 0 && s.micro_batches == 0 && s.correct == 0 && s.skipped == 0, "the sums restart");
  for (double h : s.head_sums) ok &= h == 0;
  ok &= expect(s.scale.scale == 512 && s.scale.good_steps == 3 && s.adam_t == 11 && s.grad_norm == 0.7 && s.lr == 0.1f,
               "the loss scale, AdamW's step count, the last norm and the learning rate carry on");
  return ok;
}

bool dropout_seed_inputs() {
  std::set<unsigned long long> seeds;
  for (unsigned long long step : {1ull, 2ull})
    for (unsigned long long salt : {1ull, 2ull, 3ull})
      for (int micro : {0, 1, 2}) seeds.insert(cuda::dropout_mask_seed(step, salt, micro));
  bool ok = expect(seeds.size() == 18, "every (step seed, layer, micro-batch) gets its own mask seed");
  ok &= expect(cuda::dropout_mask_seed(7, 2, 1) == cuda::dropout_mask_seed(7, 2, 1), "and the same inputs the same seed");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const std::map<std::string, std::function<bool()>> checks = {
      {"block-cache-stream-order", block_cache_stream_order},
      {"block-cache-best-fit", block_cache_best_fit},
      {"readout-reset", readout_reset_keeps_state},
      {"dropout-seed", dropout_seed_inputs},
  };
  if (argc != 2 || !checks.count(argv[1])) {
    std::fprintf(stderr, "usage: runtime_rules <check>\n");
    return 2;
  }
  return checks.at(argv[1])() ? 0 : 1;
}
