#include "data/host_buffer.h"

#include <cstdlib>
#include <new>

namespace tb {

HostBuffer::HostBuffer(std::size_t bytes, bool want_pinned) : size_(bytes) {
  if (bytes == 0) return;
  if (want_pinned) {
    data_ = static_cast<std::uint8_t*>(pinned_alloc(bytes));
    pinned_ = data_ != nullptr;
  }
  if (!data_) {
    data_ = static_cast<std::uint8_t*>(std::malloc(bytes));
    if (!data_) throw std::bad_alloc();
  }
}

void HostBuffer::release() {
  if (!data_) return;
  if (pinned_) pinned_free(data_);
  else std::free(data_);
  data_ = nullptr;
}

HostBuffer::~HostBuffer() { release(); }

HostBuffer::HostBuffer(HostBuffer&& o) noexcept : data_(o.data_), size_(o.size_), pinned_(o.pinned_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = o.data_;
    size_ = o.size_;
    pinned_ = o.pinned_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

}  // namespace tb
