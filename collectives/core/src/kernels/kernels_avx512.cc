// The AVX-512 path. CMake compiles this file alone with -mavx512f/bw/vl/dq/bf16
// (and AVX2, FMA, F16C); the dispatcher requires every one of those features,
// since the compiler may use any of them. The kernels call no BF16
// instruction themselves (see convert_impl.h).
#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VL__) || !defined(__F16C__)
#error "kernels_avx512.cc must be compiled with -mavx512f -mavx512bw -mavx512vl -mf16c"
#endif
#define SMDDP_KERNEL_NS avx512
#define SMDDP_KERNEL_NAME "avx512"
#include "kernels/kernels_impl.h"
