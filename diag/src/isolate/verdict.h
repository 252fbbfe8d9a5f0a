// The decisions of smddp-diag isolate, without MPI: which node pairs and
// groups each round tests, and which nodes or links the measurements so far
// condemn. Rank 0 holds an Isolation and asks it for the next round until it
// has nothing left to test.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace smddp::diag {

struct IsolateLimits {
  // The fleet rule: a node fails when it is more than K MADs below the
  // fleet median AND more than min_drop of the median below it, the median
  // and MAD taken over the first pairings only (all nodes measured alike).
  double mad_k = 3;           // a node more than K MADs below the fleet median fails
  double mad_floor = 0.1;     // the MAD counts as at least this fraction of the median
  double min_drop = 0.25;     // ... and only when this fraction of the median below it
  double min_busbw_gbs = 0;   // floors (profile or options); 0: none
  double min_stream_gbs = 0;
  // Where min_busbw_gbs comes from when a model predicts it (--model), for
  // the failure message; empty: a profile or --min-busbw floor.
  std::string busbw_floor_by;
  // --model: the floor of a bisection group of N nodes (its own shape's
  // prediction) and its message; nullopt or unset: the pair floor above.
  std::function<std::optional<std::pair<double, std::string>>(int nodes)> group_busbw_floor;
  int retries = 2;            // rounds that re-test suspects with nodes that passed
  int bisect_min_nodes = 16;  // bisect allreduce groups from this many nodes up
};

// One test of a round: a pair of nodes (allreduce and stream), or a larger
// allreduce group of the bisection.
struct NodeTest {
  std::vector<int> nodes;
  bool pair() const { return nodes.size() == 2; }
  // Filled in after the round:
  std::string error;      // a probe failed, timed out or a rank did not answer
  double busbw_gbs = 0;   // the group's allreduce bus bandwidth
  double stream_gbs = 0;  // pairs: the two nodes' bidirectional stream rate
  int round = 0;
  bool retry = false;     // a re-measurement of a suspect: judged, but not part of the fleet's median
};

struct NodeVerdict {
  bool failed = false;
  std::vector<std::string> reasons;  // "what, with the numbers"
  std::string code;                  // the failure code of the first reason (smddp/results/failure_codes.h)
  std::optional<double> busbw_gbs, stream_gbs;  // the best of its passing pair tests
  int tests = 0;
};

// Median and median absolute deviation (0, 0 for none).
std::pair<double, double> median_mad(std::vector<double> values);

class Isolation {
 public:
  Isolation(std::vector<std::string> labels, IsolateLimits limits);

  // The next round's tests, disjoint in nodes; empty when isolation is done.
  std::vector<NodeTest> next_round();
  // The round's tests with their results; `dead` nodes had a rank that did not answer.
  void record(std::vector<NodeTest> tests, const std::set<int>& dead);

  int rounds() const { return round_; }
  const std::vector<NodeTest>& tests() const { return history_; }
  // Per node, from everything recorded.
  std::vector<NodeVerdict> verdicts() const;

 private:
  enum class Phase { Pairs, Shifted, Third, Retry, Bisect, Done };
  std::vector<int> alive() const;
  std::set<int> suspects() const;  // failed nodes that still answer
  std::vector<NodeTest> retry_round();

  std::vector<std::string> labels_;
  IsolateLimits limits_;
  Phase phase_ = Phase::Pairs;
  int round_ = 0, retries_done_ = 0;
  std::set<int> dead_;
  std::vector<NodeTest> history_;
  std::vector<std::vector<int>> bisect_groups_;  // groups to test in the next bisection round
  bool bisect_started_ = false;
};

}  // namespace smddp::diag
