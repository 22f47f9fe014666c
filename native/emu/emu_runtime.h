// The emulated device's runtime beside NVIDIA's cuda_runtime_api.h (emu_runtime.cpp
// defines those functions): what the kernel side needs from it.
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

}  // namespace tb::emu
