// The AVX2 path (with FMA and F16C), chosen on CPUs without AVX-512.
// CMake compiles this file alone with -mavx2 -mfma -mf16c.
#if !defined(__AVX2__) || !defined(__F16C__)
#error "kernels_avx2.cc must be compiled with -mavx2 -mfma -mf16c"
#endif
#define SMDDP_KERNEL_NS avx2
#define SMDDP_KERNEL_NAME "avx2"
#include "kernels/kernels_impl.h"
