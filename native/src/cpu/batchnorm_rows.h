// Batch norm on rows (HW == 1): x is (M, C) row-major, M = N rows (channels-last activations and
// dense features), called by cpu/ops_batchnorm.cpp. Same semantics as the per-channel path.
#pragma once
#include <cstdint>

namespace tb {

class ThreadPool;

template <typename T>
void forward_train_rows(T* out, T* save_mean, T* save_invstd, const T* in, const T* gamma, const T* beta,
                        T* running_mean, T* running_var, std::int64_t M, int C, T momentum, T eps, ThreadPool* pool);
template <typename T>
void forward_eval_rows(T* out, const T* in, const T* gamma, const T* beta, const T* running_mean, const T* running_var,
                       std::int64_t M, int C, T eps, ThreadPool* pool);
template <typename T>
void backward_rows(T* din, T* dgamma, T* dbeta, const T* dout, const T* in, const T* gamma, const T* save_mean,
                   const T* save_invstd, std::int64_t M, int C, ThreadPool* pool, const T* relu_out);

}  // namespace tb
