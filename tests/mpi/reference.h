// Seeded inputs and a reference for checking collectives: every rank can
// generate any rank's input, so each rank computes its own expected output.
// Floats are multiples of 1/128 of small magnitude (exact in every float
// type), so only the reduction order can perturb results; the tolerance is
// tied to the dtype's precision and the rank count.
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
  double value = 0;      // floats
  double magnitude = 0;  // sum of |inputs|, for the float tolerance
  uint64_t bits = 0;     // integers (two's complement, truncated to dtype)
};
Expected reduce_reference(uint64_t seed, int nranks, size_t index, DataType dtype, ReduceOp op);

// Reads element i of a buffer of `dtype` as double (floats) or bits (ints).
double read_float(const void* buf, size_t i, DataType dtype);
uint64_t read_bits(const void* buf, size_t i, DataType dtype);

// True when `got` (element i of buf) matches.
bool matches_reduction(const void* buf, size_t i, DataType dtype, ReduceOp op, int nranks,
                       const Expected& e);
bool matches_input(const void* buf, size_t i, DataType dtype, uint64_t seed, int rank,
                   size_t index, ReduceOp op);

}  // namespace smddp::test
