// Runs a profile's checks: alone (a Slurm prolog, one process per node) or
// under mpirun, where node checks run once per node, cluster checks on every
// rank, and rank 0 assembles the report.
#pragma once

#include <optional>
#include <string>

#include "common/files.h"
#include "preflight/cluster.h"
#include "preflight/profile.h"
#include "preflight/report.h"

namespace smddp::diag {

struct PreflightSetup {
  Profile profile;
  SystemRoot root;
  std::string nvml_library;
  Faults faults;
};

// No MPI: this node's checks; cluster checks are skipped.
PreflightReport run_preflight_alone(const PreflightSetup& setup);

struct PreflightOutcome {
  bool root = true;                   // rank 0: `report` is complete
  PreflightReport report;
  std::optional<NodeReport> my_node;  // on each node's first rank: its results
  int exit_code = 0;                  // the same on every rank
  bool peers_missing = false;         // a rank did not report: MPI_Finalize could hang
};
// Under mpirun; every rank calls it. MPI must be initialised.
PreflightOutcome run_preflight_mpi(const PreflightSetup& setup);

}  // namespace smddp::diag
