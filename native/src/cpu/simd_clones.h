// Hot loops outside the GEMM kernels (batch norm) compiled for several instruction sets in one
// binary: the engine is built for baseline x86-64, where they run 4 floats wide. With GCC on an
// ELF x86-64 target the loader picks the AVX-512 or AVX2 clone the CPU has (ifunc); elsewhere
// the macro is empty and the baseline build runs. A function marked TB_SIMD_CLONES must get its
// loops inlined (TB_ALWAYS_INLINE on the helpers) to have them compiled for each clone.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__)
#define TB_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TB_SIMD_CLONES
#endif

#if defined(__GNUC__)
#define TB_ALWAYS_INLINE __attribute__((always_inline))
#else
#define TB_ALWAYS_INLINE
#endif
