// Element-wise reduction kernels on host memory, vectorised with run-time
// CPU dispatch (AVX-512, AVX2+F16C, portable).
//
// Semantics, identical on every ISA path:
//  - integers wrap on overflow (two's complement), Avg on integers truncates;
//  - float16/bfloat16 are widened to float, combined, rounded to nearest even
//    once per call; so are f8e4m3/f8e5m2, and their rounding saturates at
//    the largest finite value (CUDA's __NV_SATFINITE, as NCCL converts);
//  - Min/Max propagate NaN: if any input is NaN the result is NaN;
//  - Avg combines like Sum; divide() applies the final division.
#pragma once

#include <cstddef>
#include <string_view>

#include "smddp/types.h"

namespace smddp {

// dst[i] = op(srcs[0][i], ..., srcs[nsrc-1][i]). dst may equal srcs[0].
void reduce(void* dst, const void* const* srcs, int nsrc, size_t count, DataType dtype,
            ReduceOp op);

// dst[i] = op(dst[i], src[i]).
void reduce_into(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op);

// dst[i] = dst[i] / divisor, the last step of an Avg reduction.
void divide(void* dst, size_t count, DataType dtype, int divisor);

// The ISA path in use: "avx512", "avx2" or "generic". SMDDP_REDUCE_ISA forces
// a path (never one the CPU lacks).
std::string_view reduce_isa();

}  // namespace smddp
