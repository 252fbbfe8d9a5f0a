// Data that checks itself. Inputs come from (seed, rank, index) and are
// small integers (or +-1 and 2 for prod), so every dtype holds them and
// every reduction order gives the same, exact result; the expected output
// is then computed per element and compared bit for bit (avg: the sum
// divided once, rounded in the dtype). fp8 sums: inputs -1, 0, 1 from the
// first 16 (f8e4m3) or 8 (f8e5m2) ranks and 0 from the rest, so that every
// partial sum stays exact (data.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "smddp/types.h"

namespace smddp::bench {

struct CountMatrix;
struct ElementMismatch;

struct DataSpec {
  Collective collective;
  DataType dtype;
  ReduceOp op;
  uint64_t seed;
  int nranks;
  int root;
  const CountMatrix* counts = nullptr;  // alltoallv: the row's per-peer counts
};

// Fills `count` elements of this rank's send buffer (element i of the send
// buffer is input index i).
void fill_send(const DataSpec& s, int rank, void* buf, size_t count);

// Counts wrong elements of this rank's output after one call with `count`
// (the expected values: one function per collective, in data.cc).
size_t count_wrong(const DataSpec& s, int rank, const void* recv, size_t count);
// As count_wrong, and the first `max` wrong elements appended to *first
// (-B: their index in `recv`, expected and received bits).
size_t find_wrong(const DataSpec& s, int rank, const void* recv, size_t count, std::vector<ElementMismatch>* first,
                  size_t max);

}  // namespace smddp::bench
