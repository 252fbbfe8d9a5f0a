// Fitting a sweep to host memory before any row (docs/bench.md): as
// nccl-tests, a -e larger than the memory allows is lowered to the largest
// size that fits (the same on every rank), with one "#" line from rank 0;
// -b follows when it is above. The budget is SMDDP_BENCH_MEMORY, else 7/8
// of MemAvailable (of the physical memory when MemAvailable is unknown),
// never more than the host's physical memory, shared by the ranks on this
// host. Timings that cannot fit (-n) cannot be lowered: a UsageError, the
// same on every rank, before any row.
#pragma once

#include "cli/options.h"
#include "smddp/communicator.h"

namespace smddp::bench {

// Collective over `comm` (every rank of the job); the collectives run on
// groups of `group_ranks` (comm.size() without split groups).
void fit_to_memory(BenchOptions& o, Communicator& comm, int group_ranks);

}  // namespace smddp::bench
