#include "sweep/memory_fit.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "cli/alltoallv_matrix.h"
#include "cli/collective_spec.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "sweep/system_info.h"

namespace smddp::bench {
namespace {

// Host memory one rank needs for a sweep up to `max_bytes`: its buffers plus
// the engine's scratch (up to two more copies of the vector).
double bytes_per_rank(const BenchOptions& o, size_t max_bytes, int nranks) {
  size_t send = 0, recv = 0;
  for (Collective c : o.collectives) {
    for (DataType t : o.dtypes) {
      const RowCounts rc = row_counts(c, c == Collective::Barrier ? 0 : max_bytes, t, nranks, o.alltoallv);
      send = std::max(send, rc.send * dtype_size(t));
      recv = std::max(recv, rc.recv * dtype_size(t));
    }
  }
  // -B keeps repeat 1's output to compare the others with.
  const size_t bitwise = o.bitwise > 0 ? recv : 0;
  return static_cast<double>(send + recv + 2 * 8 * static_cast<size_t>(o.unalign)) * 2 + static_cast<double>(bitwise);
}

// Host memory one rank keeps for a row's timings: -n samples, and with
// per-iteration timing every rank's samples too (gathered, then kept per rank).
double timing_bytes_per_rank(const BenchOptions& o, int nranks) {
  const double per_iteration = o.per_iteration ? 2.0 * nranks + 1 : 0;
  return static_cast<double>(o.iters) * sizeof(double) * (1 + per_iteration);
}

}  // namespace

void fit_to_memory(BenchOptions& o, Communicator& comm, int group_ranks) {
  const int nranks = comm.size();
  int host_ranks = 0;
  for (int r = 0; r < nranks; ++r) host_ranks += comm.host(r) == comm.host(comm.rank()) ? 1 : 0;
  const double physical = physical_memory_bytes();
  const double available = available_memory_bytes();
  double budget = config::is_set("SMDDP_BENCH_MEMORY") ? static_cast<double>(config::bytes("SMDDP_BENCH_MEMORY"))
                  : available > 0                      ? available * 7 / 8
                                                       : physical * 7 / 8;
  // A budget the host does not have would end in a failed mapping on every rank (exit 70).
  if (physical > 0) budget = std::min(budget, physical);
  const double timings = timing_bytes_per_rank(o, nranks) * host_ranks;
  int32_t timings_too_large = budget > 0 && timings > budget ? 1 : 0;
  comm.allreduce(&timings_too_large, &timings_too_large, 1, DataType::Int32, ReduceOp::Max);
  if (timings_too_large) {
    char why[320];
    if (budget > 0 && timings > budget) {
      std::snprintf(why, sizeof why,
                    "-n/--iters %d: the timings of a row need %.0f bytes on this host (%d ranks%s), more than its "
                    "memory budget of %.0f bytes (SMDDP_BENCH_MEMORY, else 7/8 of MemAvailable); use a smaller -n",
                    o.iters, timings, host_ranks, o.per_iteration ? ", per-iteration timing" : "", budget);
    } else {
      std::snprintf(why, sizeof why, "-n/--iters %d: the timings of a row do not fit another host's memory; use a smaller -n",
                    o.iters);
    }
    throw UsageError(why);
  }
  budget -= timings;
  const auto fits = [&](size_t m) { return bytes_per_rank(o, m, group_ranks) * host_ranks <= budget; };
  // A byte matrix's parts do not shrink with -e: they fit, or the run cannot be.
  const bool matrix = o.alltoallv.fixed_bytes() &&
                      std::find(o.collectives.begin(), o.collectives.end(), Collective::AllToAllV) != o.collectives.end();
  int32_t matrix_too_large = matrix && budget > 0 && !fits(0) ? 1 : 0;
  comm.allreduce(&matrix_too_large, &matrix_too_large, 1, DataType::Int32, ReduceOp::Max);
  if (matrix_too_large) {
    throw UsageError(o.alltoallv.origin + ": the parts of its alltoallv need more host memory than a host's budget "
                     "(SMDDP_BENCH_MEMORY, else 7/8 of MemAvailable); lower NCCL_TESTS_ALLTOALLV_MATRIX_SCALE");
  }
  uint64_t fit = o.max_bytes;
  if (budget > 0 && !fits(o.max_bytes)) {
    size_t lo = 0, hi = o.max_bytes;  // fits(lo) is assumed: no buffers at 0 bytes
    while (hi - lo > 1) {
      const size_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    fit = lo;
  }
  comm.allreduce(&fit, &fit, 1, DataType::Uint64, ReduceOp::Min);
  if (fit >= o.max_bytes) return;
  o.requested_max_bytes = o.max_bytes;
  o.max_bytes = fit;
  o.min_bytes = std::min(o.min_bytes, o.max_bytes);
  if (comm.rank() == 0) std::printf("#\n# Reducing maxBytes to %zu due to memory limitation\n", o.max_bytes);
}

}  // namespace smddp::bench
