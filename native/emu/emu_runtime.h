// The emulated device's runtime beside NVIDIA's cuda_runtime_api.h (emu_device.cpp,
// emu_memory.cpp and emu_streams.cpp define those functions): what the kernel side needs from it.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "emu_kernel.h"

namespace tb::emu {

/** Whether p lies in the emulated device's memory (null is not). */
bool is_device_pointer(const void* p);

/**
 * A kernel launch: refused (the error cudaGetLastError returns) on bad geometry or a pointer
 * argument that is not device memory; else queued on the stream (or recorded, while the stream
 * is being captured into a graph).
 */
void launch(cudaStream_t stream, Kernel&& k, const std::string& bad_pointer);

/**
 * A caching allocator lent `bytes` of a `block`-byte block for work on `stream` (`fresh` from cudaMalloc: at once),
 * or took the block back. Under AddressSanitizer the bytes past the request, and a block in the
 * cache, are poisoned; each change runs in the stream's order, after the work queued before it
 * (a block is reused on its own stream while earlier kernels on it have yet to run). While the
 * stream is captured, only the lent bytes are unpoisoned, at once. Without ASan: nothing.
 */
void memory_lent(void* ptr, std::size_t bytes, std::size_t block, cudaStream_t stream, bool fresh);
void memory_returned(void* ptr, std::size_t block, cudaStream_t stream);

}  // namespace tb::emu
