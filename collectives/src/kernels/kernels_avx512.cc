// The AVX-512 path (F, BW, VL, DQ; BF16 is required by the dispatcher so that
// the path means one CPU generation, though the kernels do not use it: see
// convert_impl.h). CMake compiles this file alone with the AVX-512 flags.
#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VL__) || !defined(__F16C__)
#error "kernels_avx512.cc must be compiled with -mavx512f -mavx512bw -mavx512vl -mf16c"
#endif
#define SMDDP_KERNEL_NS avx512
#define SMDDP_KERNEL_NAME "avx512"
#include "kernels/kernels_impl.h"
