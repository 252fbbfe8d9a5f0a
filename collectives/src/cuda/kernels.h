// Element-wise reductions on CUDA device memory: the device twin of
// smddp/reduce.h, with the same semantics, bit for bit:
//  - integers wrap on overflow, Avg on integers truncates (64-bit division);
//  - float16/bfloat16 are widened to float, combined in float (src0 op src1
//    op src2 ..., left to right), rounded to nearest even once per call;
//  - Min/Max propagate NaN, and a NaN keeps the payload the host keeps;
//  - Avg combines like Sum; divide() applies the final division.
// Arithmetic on NaN (sum, prod, divide) may give another NaN payload than
// the CPU (the GPU returns its canonical NaN); every other result is
// identical.
//
// All calls are asynchronous on `stream` and throw smddp::Error when the
// launch fails. Pointers must be aligned to the element size (smddp::Error
// otherwise: element loads at other addresses fault on the GPU); runs of
// 16-byte vectors are used when the destination and every source share their
// offset within 16 bytes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "smddp/types.h"

namespace smddp::cuda {

// The most sources one reduce() folds: the pointers travel by value in the
// launch, and a node has at most 8 GPUs on p4d/p5.
inline constexpr int kMaxSources = 16;

// dst[i] = op(srcs[0][i], ..., srcs[nsrc-1][i]); 1 <= nsrc <= kMaxSources;
// dst may equal srcs[0] exactly.
void reduce(void* dst, const void* const* srcs, int nsrc, size_t count, DataType dtype,
            ReduceOp op, cudaStream_t stream);

// dst[i] = op(dst[i], src[i]).
void reduce_into(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op,
                 cudaStream_t stream);

// dst[i] = dst[i] / divisor (divisor >= 1), the last step of Avg.
void divide(void* dst, size_t count, DataType dtype, int divisor, cudaStream_t stream);

// dst[0, bytes) = src[0, bytes) by a kernel (not a copy engine): the
// streaming ceiling the reduction kernels are measured against. Any alignment.
void copy(void* dst, const void* src, size_t bytes, cudaStream_t stream);

}  // namespace smddp::cuda
