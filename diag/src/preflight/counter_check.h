// The fabric error counters over a whole preflight run: read on each node's
// first rank before its node checks and again after the cluster checks; a
// counter that moved (retransmits, drops, link downs, impaired remotes while
// the allreduce and link tests ran) fails the node as "fabric_counters".
// Nodes without such counters (no RDMA device) get no result at all.
#pragma once

#include <optional>
#include <vector>

#include "common/files.h"
#include "preflight/report.h"
#include "smddp/tools/fabric_counters.h"

namespace smddp::diag {

inline constexpr const char* kFabricCountersCheck = "fabric_counters";

class CounterWatch {
 public:
  explicit CounterWatch(const SystemRoot& root);
  std::optional<CheckResult> result() const;

 private:
  SystemRoot root_;
  tools::FabricCounterSnapshot before_;
};

// Carries the fabric_counters result of a node's own results (`local`) into
// its merged, profile-ordered list (the profile does not name it).
void add_counter_result(std::vector<CheckResult>& merged, const std::vector<CheckResult>& local);

}  // namespace smddp::diag
