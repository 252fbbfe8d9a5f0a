// Seeded inputs and a reference for checking collectives: every rank can
// generate any rank's input, so each rank computes its own expected output.
// Floats are multiples of 1/128 of small magnitude (exact in every 16- to
// 64-bit float type; fp8 inputs are those values rounded to the nearest fp8,
// still multiples of 1/128), so only rounding in the reduction can perturb
// results.
//
// The oracle, per element (p = significand bits: fp16 11, bf16 8, fp32 24,
// fp64 53, f8e4m3 4, f8e5m2 3; u = 2^-p the unit roundoff, for fp8
// 2^-p + 2^-23 since an engine step may add in float before it rounds to
// fp8 (each such step errs by at most (1 + 2^-24)(1 + 2^-p) - 1); n ranks;
// S = sum of |inputs|):
//  - integers, min and max: bit-exact.
//  - sum: exact, so bit-exact, when 128*S < 2^p: every partial sum, in any
//    order, is then a multiple of 1/128 below 2^(p-7). Otherwise
//    |got - sum| <= g(n-1) * S, with g(k) = (1 + u)^k - 1: each input passes
//    through at most n-1 additions, each rounding once (Higham, Accuracy and
//    Stability, 4.2; g(k) <= k*u / (1 - k*u), and stays finite for fp8's
//    large u). Subnormal results add no error (a sum below the smallest
//    normal is exact), and nothing overflows: |sums| <= n, far below 448,
//    so fp8's saturation never acts.
//  - avg: the engine divides the sum once. With an exact sum the result is
//    bit-exact: the sum over n, rounded to the dtype. Otherwise
//    g(n-1) * S / n for the sum plus 2u * |avg| for the division and, in
//    fp16/bf16, the narrowing of the float quotient.
//  - prod: the inputs are k/128 with k in [112, 144]; exact when the product
//    of the k is below 2^p (every partial product's numerator divides it).
//    Otherwise |got - prod| <= g(n-1) * |prod|: n-1 multiplications.
// A dropped rank moves a sum by at least 1/128 and a product by at least
// 1/144 of itself, far beyond these bounds at the rank counts tested, but
// for fp8: its bounds (u = 1/16, 1/8) can hide one rank's input; its data
// movement is still checked bit for bit (min, max, every non-reducing
// collective), and smddp-bench's fp8 data (bench/src/sweep/data.cc) is exact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "smddp/types.h"

namespace smddp::test {

// Input element `index` of `rank`, as a double (exact in `dtype`).
double input_value(uint64_t seed, int rank, size_t index, DataType dtype, ReduceOp op);

// Writes `count` inputs of `rank` starting at element `first` into `out`.
void fill_input(void* out, uint64_t seed, int rank, size_t first, size_t count, DataType dtype,
                ReduceOp op);

// Reduction of element `index` over ranks 0..nranks-1, as the dtype defines it
// (integers wrap, avg truncates). Returned as double for floats, exact
// integer bits in `*bits` for integers.
struct Expected {
  double value = 0;      // floats: the exact reduction (avg: exact sum / n)
  bool exact = true;     // floats: the result must equal value rounded to the dtype
  double tolerance = 0;  // floats, when not exact: the bound above
  uint64_t bits = 0;     // integers (two's complement, truncated to dtype)
};
Expected reduce_reference(uint64_t seed, int nranks, size_t index, DataType dtype, ReduceOp op);

// Reads element i of a buffer of `dtype` as double (floats) or bits (ints).
double read_float(const void* buf, size_t i, DataType dtype);
uint64_t read_bits(const void* buf, size_t i, DataType dtype);

// `v` rounded to the nearest value of the float `dtype` (ties to even).
double round_to(DataType dtype, double v);

// True when `got` (element i of buf) matches.
bool matches_reduction(const void* buf, size_t i, DataType dtype, const Expected& e);
bool matches_input(const void* buf, size_t i, DataType dtype, uint64_t seed, int rank,
                   size_t index, ReduceOp op);

}  // namespace smddp::test
