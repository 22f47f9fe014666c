// Built when the CUDA backend is off (no nvcc, or TB_WITH_CUDA=OFF).
#include "core/device_info.h"

namespace tb {

CudaStatus cuda_status() {
  CudaStatus status;
  status.compiled = false;
  status.reason = "this build has no CUDA backend (built without nvcc or with TB_WITH_CUDA=OFF)";
  return status;
}

}  // namespace tb
