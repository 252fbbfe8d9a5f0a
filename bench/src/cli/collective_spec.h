// How each collective plugs into the harness (after nccl-tests): the counts
// its buffers need for a row size, and its bus-bandwidth factor, both read
// from the collective's row in smddp/traits.h.
//
// busbw = algbw * factor, where algbw = size / time and the factor is
//   allreduce 2(n-1)/n; reducescatter, allgather, alltoall, alltoallv,
//   gather, scatter (n-1)/n; broadcast, reduce, sendrecv 1; barrier 0
//   (latency only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cli/alltoallv_matrix.h"
#include "smddp/types.h"

namespace smddp::bench {

struct RowCounts {
  size_t count = 0;  // the count argument of the call (NCCL convention)
  size_t send = 0;   // elements of the send buffer (alltoallv: the largest on any rank)
  size_t recv = 0;   // elements of the receive buffer (alltoallv: likewise)
  size_t bytes = 0;  // the row's size: the larger buffer, after rounding (alltoallv: n * count)
  size_t elements = 0;  // the row's count column: elements of the larger buffer
};

// Rounds `bytes` down to whole elements, and to a multiple of the rank count
// where the collective splits the buffer (as nccl-tests does). alltoallv
// needs the job's pattern (alltoallv_matrix.h); under a byte matrix its row
// is the matrix's, whatever `bytes`: its size the largest row or column sum
// (nccl-tests' bandwidth is that rank's), its count argument 0.
RowCounts row_counts(Collective c, size_t bytes, DataType dtype, int nranks, const AlltoallvPattern& alltoallv = {});

double bus_factor(Collective c, int nranks);

}  // namespace smddp::bench
