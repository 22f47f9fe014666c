// JS functions over the loader: reading a source back (tests), benchmarking
// loader settings, and measuring raw sequential read and host-to-device copy bandwidth.
#pragma once
#include <napi.h>

namespace tb::addon {

// sourceInfo(sourceJson) -> { records, description, fields }
Napi::Value SourceInfo(const Napi::CallbackInfo& info);
// runLoader(sourceJson, optionsJson, epochs) -> { epochs: [Float64Array of record indices], fields: { name: Uint8Array } }
// (field bytes of the first epoch, in loader order). Blocks; for tests and tools on small data.
Napi::Value RunLoader(const Napi::CallbackInfo& info);
// benchLoader(sourceJson, optionsJson, maxBatches, maxSeconds) -> Promise<stats>
Napi::Value BenchLoader(const Napi::CallbackInfo& info);
// sequentialRead([paths]) -> Promise<{ bytes, seconds, mbPerSec }>
Napi::Value SequentialRead(const Napi::CallbackInfo& info);
// benchH2dCopy(device, bytes, reps) -> Promise<{ bytes, reps, bestSeconds, medianSeconds, bestMBps, medianMBps, emulated, how }>
// (pinned host-to-device copies; E_CUDA without a device)
Napi::Value BenchH2dCopy(const Napi::CallbackInfo& info);

}  // namespace tb::addon
