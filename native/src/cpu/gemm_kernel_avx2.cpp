// Built with AVX2 + FMA flags (see CMakeLists.txt); called only when the CPU has them.
#define TB_MR 6
#define TB_NR 16
#define TB_KERNEL_NAME kernel_avx2
#define TB_DOT_NAME dot_kernel_avx2
#include "cpu/gemm_kernel.inc"
#define TB_IGEMM_NAME igemm_avx2
#define TB_DWK_NAME dwk_avx2
#include "cpu/conv_kernel.inc"
