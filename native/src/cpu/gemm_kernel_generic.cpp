#define TB_MR 6
#define TB_NR 16
#define TB_KERNEL_NAME kernel_generic
#define TB_DOT_NAME dot_kernel_generic
#include "cpu/gemm_kernel.inc"
#define TB_IGEMM_NAME igemm_generic
#define TB_DWK_NAME dwk_generic
#include "cpu/conv_kernel.inc"
