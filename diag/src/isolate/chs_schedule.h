// The comparison of the simulation table (docs/diag.md, "Simulation"): the
// pairing of GoogleCloudPlatform/cluster-health-scanner's NCCL health check
// as its health runner describes it, modelled here (none of its code): every
// node in one random pair (an odd node out joins a random other pair), a
// pair passes when its allreduce bus bandwidth reaches a fixed threshold,
// both nodes of a failing pair are suspects, and each suspect is re-paired
// once with a node that passed; a suspect that fails again is named. No
// stream test, no fleet statistics, no link verdict.
#pragma once

#include <cstdint>

#include "isolate/verdict.h"

namespace smddp::diag {

class ChsSchedule final : public RoundSchedule {
 public:
  // `threshold_gbs`: the fixed pass mark (the scanner's BANDWIDTH_THRESHOLD).
  ChsSchedule(int nodes, double threshold_gbs, uint64_t seed);

  std::vector<NodeTest> next_round() override;
  void record(std::vector<NodeTest> tests, const std::set<int>& dead) override;
  int rounds() const override { return round_; }
  const std::vector<NodeTest>& tests() const override { return history_; }
  std::vector<NodeVerdict> verdicts() const override;

 private:
  bool passes(const NodeTest& t) const { return t.error.empty() && t.busbw_gbs >= threshold_; }
  int nodes_;
  double threshold_;
  uint64_t seed_;
  int round_ = 0;
  std::vector<NodeTest> history_;
};

}  // namespace smddp::diag
