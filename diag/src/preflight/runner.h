// Runs a profile's checks: alone (a Slurm prolog, one process per node) or
// under mpirun, where node checks run once per node, cluster checks on every
// rank, and rank 0 assembles the report.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "preflight/cluster.h"
#include "preflight/golden.h"
#include "preflight/profile.h"
#include "preflight/report.h"
#include "shared/files.h"
#include "smddp/results/model_baseline.h"

namespace smddp::diag {

struct PreflightSetup {
  Profile profile;                         // after --checks/--skip
  std::vector<std::string> only, skip;     // --checks, --skip as given
  SystemRoot root;
  std::string nvml_library;
  Faults faults;
  std::optional<results::ModelBaseline> model;  // --model: allreduce_busbw's expected figure
  std::optional<Golden> golden;                 // --golden: what consistency expects on every node
};

// What a rank is about to run: a hash of the profile's name and resolved
// checks with every parameter, and of --checks/--skip. Ranks compare it
// before any collective, so that they never wait in different checks.
std::string setup_fingerprint(const PreflightSetup& setup);

// No MPI: this node's checks; cluster checks are skipped.
PreflightReport run_preflight_alone(const PreflightSetup& setup);

struct PreflightOutcome {
  bool root = true;                   // rank 0: `report` is complete
  bool ran = true;                    // false: ended before any check (see message)
  PreflightReport report;
  std::optional<NodeReport> my_node;  // on each node's first rank: its results
  int exit_code = 0;                  // the same on every rank
  std::string message;                // rank 0: one line to print (the ranks disagree, a rank is missing)
  bool peers_missing = false;         // a rank did not report: MPI_Finalize could hang
};
// Under mpirun; every rank calls it. MPI must be initialised.
PreflightOutcome run_preflight_mpi(const PreflightSetup& setup);

}  // namespace smddp::diag
