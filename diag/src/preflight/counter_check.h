// The fabric error counters over a whole preflight run: read on each node's
// first rank before its node checks and again after the cluster checks; a
// counter that moved (retransmits, drops, link downs, impaired remotes while
// the allreduce and link tests ran) fails the node as "fabric_counters".
// Nodes without such counters (no RDMA device) get no result at all.
// isolate reports its own rounds' deltas the same way (counter_result).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "preflight/report.h"
#include "shared/counter_watch.h"

namespace smddp::diag {

inline constexpr const char* kFabricCountersCheck = "fabric_counters";

// The "fabric_counters" result of a node's deltas over `what` ("the
// checks", "the isolate tests"): pass when none moved, else fail naming them.
CheckResult counter_result(const CounterDeltas& d, const std::string& what);

// Carries the fabric_counters result of a node's own results (`local`) into
// its merged, profile-ordered list (the profile does not name it).
void add_counter_result(std::vector<CheckResult>& merged, const std::vector<CheckResult>& local);

}  // namespace smddp::diag
