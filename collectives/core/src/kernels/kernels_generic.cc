// The portable path: baseline x86-64 (SSE2) and a software float16
// conversion. Always available, and the reference the other paths must match
// bit for bit.
#define SMDDP_KERNEL_NS generic
#define SMDDP_KERNEL_NAME "generic"
#include "kernels/kernels_impl.h"
