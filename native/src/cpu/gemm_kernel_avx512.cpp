// Built with AVX-512 flags (see CMakeLists.txt); called only when the CPU has them.
#define TB_MR 6
#define TB_NR 32
#define TB_KERNEL_NAME kernel_avx512
#define TB_DOT_NAME dot_kernel_avx512
#include "cpu/gemm_kernel.inc"
#define TB_IGEMM_NAME igemm_avx512
#define TB_DWK_NAME dwk_avx512
#include "cpu/conv_kernel.inc"
