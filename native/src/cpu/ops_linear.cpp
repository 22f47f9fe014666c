#include <algorithm>

#include "core/threads.h"
#include "cpu/gemm.h"
#include "cpu/ops.h"

namespace tb {

template <typename T>
void linear_forward(T* out, const T* in, const T* W, const T* b, int B, int I, int O, ThreadPool* pool) {
  // out (B, O) = in (B, I) . W^T (I, O)
  gemm(false, true, B, O, I, T(1), in, I, W, I, T(0), out, O, pool);
  if (!b) return;
  for (int r = 0; r < B; ++r) {
    T* o = out + static_cast<std::int64_t>(r) * O;
    for (int j = 0; j < O; ++j) o[j] += b[j];
  }
}

template <typename T>
void linear_backward(T* din, T* dW, T* db, const T* dout, const T* in, const T* W, int B, int I, int O,
                     ThreadPool* pool) {
  // din (B, I) = dout (B, O) . W (O, I)
  if (din) gemm(false, false, B, I, O, T(1), dout, O, W, I, T(0), din, I, pool);
  // dW (O, I) += dout^T (O, B) . in (B, I)
  gemm(true, false, O, I, B, T(1), dout, O, in, I, T(1), dW, I, pool);
  if (!db) return;
  for (int r = 0; r < B; ++r) {
    const T* d = dout + static_cast<std::int64_t>(r) * O;
    for (int j = 0; j < O; ++j) db[j] += d[j];
  }
}

template void linear_forward<float>(float*, const float*, const float*, const float*, int, int, int, ThreadPool*);
template void linear_forward<double>(double*, const double*, const double*, const double*, int, int, int, ThreadPool*);
template void linear_backward<float>(float*, float*, float*, const float*, const float*, const float*, int, int, int,
                                     ThreadPool*);
template void linear_backward<double>(double*, double*, double*, const double*, const double*, const double*, int, int,
                                      int, ThreadPool*);

}  // namespace tb
