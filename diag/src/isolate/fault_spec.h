// The faults `smddp-diag isolate --simulate` injects: a comma list of
// KIND=COUNT[@FACTOR], e.g. "slow-node=3@2.0,slow-link=1@4.0,stall=1,flap=1,corrupt=1@0.5".
//   slow-node  nodes whose every test runs FACTOR times slower
//   slow-link  links of the simulated fabric that carry tests FACTOR times slower
//   stall      nodes whose ranks stop answering (a hang the run ends by its deadline)
//   flap       links FACTOR times slower in some rounds only
//   corrupt    nodes whose tests return wrong results, each with probability
//              FACTOR (a rate in (0, 1], default 1)
// FACTOR defaults to 2 and is above 1, at most 1000; stall takes none. "" or
// "none": no faults.
#pragma once

#include <string>
#include <vector>

namespace smddp::diag {

enum class FaultKind { SlowNode, SlowLink, Stall, Flap, Corrupt };

struct FaultCount {
  FaultKind kind;
  int count = 0;
  double factor = 2;
};

inline constexpr int kMaxFaultCount = 100000;

// Throws UsageError, one line naming --faults and the item at fault.
std::vector<FaultCount> parse_fault_spec(const std::string& spec);

const char* fault_kind_name(FaultKind kind);

}  // namespace smddp::diag
