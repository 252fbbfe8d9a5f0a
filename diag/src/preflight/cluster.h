// What the cluster checks share: the MPI job (ranks, hosts, nodes), the smddp
// engine communicator, message tags, and faults injected by tests.
#pragma once

#include <mpi.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "preflight/node_facts.h"

namespace smddp {
class Communicator;
}

namespace smddp::diag {

struct Golden;

// Faults a test can inject into this rank (SMDDP_DIAG_FAULT, comma list):
//   unreachable          this rank never answers rank_reachability probes
//   clock_offset_ms=N    this rank's clock reads N ms ahead in clock_skew
//   nccl_version=V[@HOST]  this rank (only on host HOST, when given) reports
//                        NCCL version V in consistency; with @HOST every rank
//                        can be given the same setting
//   corrupt[@HOST]       this rank (only on host HOST, when given) flips a bit
//                        of what it sends in isolate's allreduce probe
struct Faults {
  bool unreachable = false;
  bool corrupt = false;
  double clock_offset_ms = 0;
  std::string nccl_version;
  // Throws UsageError for an unknown fault.
  static Faults from_env();
};

class ClusterContext {
 public:
  MPI_Comm comm = MPI_COMM_NULL;       // a private duplicate of MPI_COMM_WORLD
  int rank = 0, size = 1;
  Communicator* engine = nullptr;
  std::vector<std::string> hosts;      // per rank
  std::vector<int> node_of;            // per rank
  std::vector<int> leaders;            // first rank of each node
  std::vector<std::string> labels;     // per node (report labels)
  Faults faults;
  // consistency: where this node's versions come from (nccl_library is the
  // check's parameter), and --golden's expectations (rank 0 judges).
  FactSources fact_sources;
  const Golden* golden = nullptr;
  // --model: allreduce_busbw's floor is the model's prediction for this
  // job's shape less its tolerance (replacing the profile's
  // min_gbytes_per_s); model_floor_by names the model and the prediction.
  double model_floor_gbs = 0;
  std::string model_floor_by;

  int num_nodes() const { return static_cast<int>(leaders.size()); }
  int node() const { return node_of.at(static_cast<size_t>(rank)); }
  bool leader() const { return leaders.at(static_cast<size_t>(node())) == rank; }
  std::string who(int r) const;  // "rank 3 (host)"
};

// Message tags of the preflight's own exchanges.
enum PreflightTag : int {
  kTagReach = 7101, kTagReachReport, kTagClockPing, kTagClockReply, kTagClockResult,
  kTagBusbwReport, kTagDecision, kTagNodeResults, kTagFinal, kTagAgree, kTagAgreed, kTagNodeIds, kTagNodeIdList,
  kTagFacts,
};

// Which ranks to blame for missed reachability answers. missing[i] lists the
// ranks rank i heard nothing from (nullopt: rank i sent no report at all).
// A rank most others could not hear is unreachable; the rest of the misses
// (between ranks that are otherwise fine) blame the silent side. Reports
// from unreachable ranks are ignored: a dead link blames its own end.
std::map<int, std::string> blame_unreachable(const std::vector<std::optional<std::vector<int>>>& missing,
                                             const std::vector<std::string>& hosts);

}  // namespace smddp::diag
