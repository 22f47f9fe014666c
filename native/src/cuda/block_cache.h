// The caching allocator's free list, in plain C++ (no CUDA) so its reuse rule
// is tested without a GPU (test/native/cuda-host.test.ts). A freed block
// remembers the stream that used it and the event recorded on that stream at
// free. The same stream may take it back at once: work it queues later runs
// after everything queued before the free. Another stream may take it only
// once that event has completed, or kernels still reading or writing the old
// buffer would race with the new owner.
#pragma once
#include <cstddef>
#include <map>
#include <optional>

namespace tb {

class BlockCache {
 public:
  struct Block {
    std::size_t size = 0;
    void* ptr = nullptr;
    void* stream = nullptr;  // cudaStream_t of the last user (null: the legacy default stream)
    void* freed = nullptr;   // cudaEvent_t recorded on `stream` at free; null: none could be recorded
  };

  void put(const Block& b) { blocks_.emplace(b.size, b); }

  // The smallest cached block of at least `size` bytes (and at most twice that, or memory fragments)
  // that `stream` may use now. is_done(event) asks whether a free event has completed; it is asked
  // only about blocks of other streams.
  template <typename IsDone>
  std::optional<Block> take(std::size_t size, void* stream, IsDone&& is_done) {
    for (auto it = blocks_.lower_bound(size); it != blocks_.end() && it->first <= 2 * size; ++it) {
      const Block& b = it->second;
      if (b.stream == stream || (b.freed && is_done(b.freed))) {
        Block out = b;
        blocks_.erase(it);
        return out;
      }
    }
    return std::nullopt;
  }

  // Hands every cached block to `release` and forgets them (emptying the cache, after a device sync).
  template <typename Release>
  void drain(Release&& release) {
    for (auto& kv : blocks_) release(kv.second);
    blocks_.clear();
  }

  std::size_t count() const { return blocks_.size(); }

 private:
  std::multimap<std::size_t, Block> blocks_;
};

}  // namespace tb
