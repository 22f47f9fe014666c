// nvcuda::wmma as the engine uses it (16x16x16 tiles, bf16/fp16 operands, fp32
// accumulators, row-major loads and stores), included by cuda_emu.h. On a GPU a
// fragment is spread over the 32 lanes of a warp; here every lane holds the whole
// tile and computes it alike, and each operation is a warp collective, so a lane
// that skips one (divergence) is caught as on the device it would hang or corrupt.
// Products are summed in fp32 in k order: the tensor cores' own order and rounding
// are among what emulation cannot tell (docs/adr/0023-emulated-cuda.md).
#pragma once
#include <cstddef>

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  static constexpr int rows = std::is_same_v<Use, matrix_b> ? K : M;
  static constexpr int cols = std::is_same_v<Use, matrix_a> ? K : N;
  static constexpr int num_elements = rows * cols;
  T x[num_elements];
};

namespace detail {
inline void warp_point(const char* file, int line) { ::tb::emu::warp_collective(::tb::emu::WarpOp::Sync, 0xffffffffu, nullptr, nullptr, 0, 0, 32, file, line); }
template <typename T>
inline float to_float(T v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else return static_cast<float>(v);
}
}  // namespace detail

template <typename Use, int M, int N, int K, typename T, typename L>
inline void fill_fragment_at(fragment<Use, M, N, K, T, L>& f, T v, const char* file, int line) {
  detail::warp_point(file, line);
  for (auto& e : f.x) e = v;
}

template <typename Use, int M, int N, int K, typename T, typename L>
inline void load_matrix_sync_at(fragment<Use, M, N, K, T, L>& f, const T* p, unsigned ld, const char* file, int line) {
  static_assert(std::is_same_v<L, row_major>, "the emulated wmma loads row-major operand tiles only (as the engine uses them)");
  detail::warp_point(file, line);
  using F = fragment<Use, M, N, K, T, L>;
  for (int r = 0; r < F::rows; ++r)
    for (int c = 0; c < F::cols; ++c) f.x[r * F::cols + c] = p[static_cast<std::size_t>(r) * ld + c];
}

namespace detail {
inline unsigned lane_id() {
  const uint3 t = ::tb::emu::thread_index();
  const dim3 bd = ::tb::emu::block_dim();
  return (t.x + bd.x * (t.y + bd.y * t.z)) % 32;
}
}  // namespace detail

// One store for the warp (lane 0 holds the same tile as every lane), between two warp points: the
// device's lanes each write their own part, so no two of them write one element.
template <int M, int N, int K, typename T>
inline void store_matrix_sync_at(T* p, const fragment<accumulator, M, N, K, T>& f, unsigned ld, layout_t layout, const char* file, int line) {
  detail::warp_point(file, line);
  if (detail::lane_id() == 0)
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < N; ++c) {
        T& out = layout == mem_row_major ? p[static_cast<std::size_t>(r) * ld + c] : p[static_cast<std::size_t>(c) * ld + r];
        out = f.x[r * N + c];
      }
  detail::warp_point(file, line);
}

// The product is the same in every lane (each holds the whole tiles): lane 0 computes it once for
// the warp, between two warp points, and every lane takes it (32 times less work than each lane alone).
template <int M, int N, int K, typename TA, typename LA, typename LB>
inline void mma_sync_at(fragment<accumulator, M, N, K, float>& d, const fragment<matrix_a, M, N, K, TA, LA>& a, const fragment<matrix_b, M, N, K, TA, LB>& b,
                        const fragment<accumulator, M, N, K, float>& c, const char* file, int line) {
  static float product[32][M * N];  // per warp of the running block (one block runs at a time)
  const uint3 t = ::tb::emu::thread_index();
  const dim3 bd = ::tb::emu::block_dim();
  const unsigned linear = t.x + bd.x * (t.y + bd.y * t.z), warp = linear / 32, lane = linear % 32;
  detail::warp_point(file, line);
  if (lane == 0) {
    float* out = product[warp % 32];
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        float acc = c.x[i * N + j];
        for (int k = 0; k < K; ++k) acc += detail::to_float(a.x[i * K + k]) * detail::to_float(b.x[k * N + j]);
        out[i * N + j] = acc;
      }
  }
  detail::warp_point(file, line);
  for (int e = 0; e < M * N; ++e) d.x[e] = product[warp % 32][e];
}

}  // namespace nvcuda::wmma

// The calls carry their site, as the scheduler names it in a divergence or deadlock report.
#define fill_fragment(f, v) fill_fragment_at(f, v, __FILE__, __LINE__)
#define load_matrix_sync(f, p, ld) load_matrix_sync_at(f, p, ld, __FILE__, __LINE__)
#define store_matrix_sync(p, f, ld, layout) store_matrix_sync_at(p, f, ld, layout, __FILE__, __LINE__)
#define mma_sync(d, a, b, c) mma_sync_at(d, a, b, c, __FILE__, __LINE__)
