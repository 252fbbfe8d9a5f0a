// The fabric error counters of this node over a piece of work: read when
// the watch starts and again when asked (smddp::tools::read_fabric_counters
// under the --sysfs-root tree). Shared by preflight (over its checks) and
// isolate (over its rounds): both report the counters that moved.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "shared/files.h"
#include "smddp/tools/fabric_counters.h"

namespace smddp::diag {

struct CounterDeltas {
  size_t watched = 0;                              // error counters present now
  std::vector<tools::FabricCounterDelta> moved;    // those that grew, in key order
};

class CounterWatch {
 public:
  explicit CounterWatch(const SystemRoot& root);
  // Nothing when the node has no such counters (no RDMA device), before or after.
  std::optional<CounterDeltas> deltas() const;

 private:
  SystemRoot root_;
  tools::FabricCounterSnapshot before_;
};

// {"watched": N, "moved": {"DEV/PORT/NAME": delta, ...}}, and back (rank 0
// gathers other nodes' deltas as JSON).
nlohmann::json to_json(const CounterDeltas& d);
std::optional<CounterDeltas> counter_deltas_from_json(const nlohmann::json& j);
// "rdmap16s27/1/retrans_pkts +12, mlx5_0/link_downed +1"
std::string moved_text(const CounterDeltas& d);

}  // namespace smddp::diag
