// The consistency check's exchange (every rank's settings and each node
// leader's facts to rank 0) and its results; shared by preflight and
// smddp-diag golden learn.
#pragma once

#include <mpi.h>

#include <optional>
#include <string>
#include <vector>

#include "preflight/consistency.h"
#include "preflight/node_facts.h"
#include "preflight/report.h"
#include "shared/mpi_util.h"

namespace smddp::diag {

// What one rank sends: its settings, its host, and, from a node's first
// rank, the node's facts.
std::string consistency_payload(bool leader, const FactSources& sources);

struct GatheredNodes {
  std::vector<NodeEntry> nodes;
  std::vector<Facts> notes;                 // per node: where the facts came from
  std::vector<std::vector<int>> missing;    // per node: ranks that sent nothing in time
  std::vector<std::string> hosts;           // per rank ("" when it sent nothing)
};
// Rank 0: the payloads (gather_until's answer) as one entry per node.
// node_of: node of each rank (empty: group by the host each rank sent, in
// order of first rank); labels: per node (empty: the host).
GatheredNodes gather_nodes(const std::vector<std::optional<std::string>>& payloads, std::vector<int> node_of,
                           std::vector<std::string> labels);

struct Golden;
struct Faults;
class Params;
// The check's results, one per node: findings across nodes and ranks,
// against `golden` (may be null), advice on settings. leaders: each node's
// first rank; rank_hosts: per rank, for messages.
std::vector<CheckResult> judge_consistency(const GatheredNodes& gathered, const std::vector<std::string>& rank_hosts,
                                           const std::vector<int>& leaders, const Golden* golden, const Params& params);
// Without MPI (a Slurm prolog): this node alone, against `golden`.
CheckResult consistency_alone(const FactSources& base, const Faults& faults, const Golden* golden, const Params& params);
FactSources consistency_sources(const FactSources& base, const Faults& faults, const Params& params);

// "smddp-diag preflight: warning: ..." lines, one per distinct advice, with
// the nodes it applies to (rank 0, from the report's consistency results).
std::vector<std::string> advice_lines(const PreflightReport& report);

}  // namespace smddp::diag
