// smddp-diag isolate --simulate: the real schedule and verdict (Isolation,
// verdict.h; or the comparison's ChsSchedule) driven over a simulated
// fabric instead of MPI, so isolation can be measured at fleet scale
// (docs/diag.md, "Simulation"). The fabric is a tree: every node on its own
// access link to its rack's network node, racks joined by uplinks (--racks
// or a --topology file's layers). A test runs at the nominal rate times the
// slowest factor among its nodes and the faulty links it crosses, times a
// noise sample (noise.h); a stalled node's tests end at the round's bound;
// a corrupting node's tests return wrong results at its rate.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "isolate/fault_spec.h"
#include "isolate/noise.h"
#include "isolate/topology.h"
#include "isolate/verdict.h"

namespace smddp::diag {

// Nominal rates of a healthy pair test (EFA-like; only the simulated times
// depend on them) and the coordination time of a round (plan and reports).
inline constexpr double kSimBusbwGbs = 100, kSimStreamGbs = 50, kSimRoundOverheadS = 0.05;
inline constexpr int kMaxSimNodes = 100000;

struct SimSettings {
  int nodes = 0;
  uint64_t seed = 1;
  std::vector<FaultCount> faults;
  int racks = 1;                        // nodes split evenly into racks (without a topology)
  std::optional<TopologyMap> topology;  // else: its first `nodes` hosts by name
  NoiseModel noise;
  IsolateLimits limits;
  double round_bound_s = 38;            // the real run's bound per round (stalls end there)
  // A healthy pair test's probe times at the nominal rates (the command's
  // probe sizes): the allreduce's, the stream's.
  double allreduce_seconds = 0, stream_seconds = 0;
  bool chs = false;                     // the cluster-health-scanner schedule instead
};

struct InjectedFault {
  FaultKind kind = FaultKind::SlowNode;
  double factor = 1;       // corrupt: the rate of wrong results
  int node = -1;           // slow-node, stall, corrupt
  std::string link;        // slow-link, flap: "CHILD -> PARENT" or "HOST access link"
  std::vector<int> below;  // slow-link, flap: the nodes below the link
  int from_round = 0;      // stall: its ranks stop answering in this round
};

struct SimRun {
  std::vector<std::string> labels;
  std::vector<std::vector<std::string>> layers;  // per node, top first; empty: flat
  std::vector<int> racks;
  std::vector<InjectedFault> faults;
  std::unique_ptr<RoundSchedule> schedule;
  double seconds = 0;  // simulated
};

// Throws UsageError (one line) when the faults do not fit the fabric.
SimRun simulate(const SimSettings& s);

// The `simulation` object of the JSON report: the settings and the injected truth.
nlohmann::json simulation_json(const SimRun& run, const SimSettings& s);

}  // namespace smddp::diag
