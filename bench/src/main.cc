// smddp-bench: the size-sweep driver. Validates everything first (exit 64),
// then sweeps every row over every backend and reports as it goes.
//
// Exit codes: 0 ok, 1 wrong values, 2 below --min-busbw, 3 timeout, lost
// peer or transport failure, 4 other runtime error, 64 usage.
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>

#include "run.h"
#include "smddp/error.h"

namespace {

// Before MPI starts the rank is only known from the launcher's environment;
// print usage errors once, from rank 0 (or a rank we cannot place).
bool is_first_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "RANK"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v) == 0;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace smddp;
  bench::BenchOptions options;
  try {
    if (int rc = bench::parse_command_line(argc, argv, options); rc >= 0) return rc;
  } catch (const UsageError& e) {
    if (is_first_rank()) std::fprintf(stderr, "smddp-bench: %s\n", e.what());
    return bench::kExitUsage;
  }
  int rc = bench::run_benchmark(options);
  return rc;
}
