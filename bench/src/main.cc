// smddp-bench: the size-sweep driver. Validates everything first (exit 64),
// then sweeps every row over every backend and reports as it goes.
//
// Exit codes: 0 ok, 1 wrong values, 2 below --min-busbw, 3 timeout, lost
// peer, transport or CUDA device failure, or this rank killed by a signal,
// 64 usage, 70 other runtime error (smddp/tools/exit_codes.h).
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <new>

#include "supervision/hang_report.h"
#include "sweep/run.h"
#include "supervision/supervisor.h"
#include "smddp/config.h"
#include "smddp/error.h"

namespace {

// Before MPI starts the rank is only known from the launcher's environment;
// print usage errors once, from rank 0 (or a rank we cannot place).
bool is_first_rank() {
  const char* rank = smddp::bench::launcher_rank();
  return !rank || std::atoi(rank) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace smddp;
  bench::BenchOptions options;
  bench::register_stall_check();  // before any check of the table (--list-config checks too)
  try {
    if (int rc = bench::parse_command_line(argc, argv, options); rc >= 0) return rc;
  } catch (const UsageError& e) {
    if (is_first_rank()) {
      std::fprintf(stderr, "smddp-bench: %s\n", e.what());
    } else {
      config::yield_to_reporting_rank();
    }
    return bench::kExitUsage;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "smddp-bench: out of host memory while reading the options\n");
    return bench::kExitRuntime;
  }
  // Every SMDDP_* setting, before the supervisor forks and the ranks connect:
  // a bad one is one line from rank 0 and exit 64 on every rank.
  config::check_or_exit("smddp-bench", config::kEngine | config::kBench);
  // Options are valid: from here on a rank killed by a signal is reported
  // by its supervisor as a lost rank.
  if (auto supervisor_exit = bench::supervise_rank(bench::kExitTimeout)) return *supervisor_exit;
  return bench::run_benchmark(options);
}
