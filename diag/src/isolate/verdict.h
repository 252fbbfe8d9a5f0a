// The decisions of smddp-diag isolate, without MPI: which node pairs and
// groups each round tests, and which nodes or links the measurements so far
// condemn. Rank 0 holds an Isolation and asks it for the next round until it
// has nothing left to test; the simulator (simulator.h) drives the same
// class over a simulated fabric.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace smddp::diag {

struct IsolateLimits {
  // The fleet rule: a test fails when a metric is more than K MADs below
  // the fleet median AND more than min_drop of the median below it, the
  // median and MAD taken over the first pairings' tests (all nodes measured
  // alike); a re-measurement at the same fraction of its own round's median.
  // The defaults are tuned on the simulator (docs/diag.md#simulation), one
  // place for the real run and the simulation.
  double mad_k = 2.5;         // more than K MADs below the fleet median fails
  double mad_floor = 0.1;     // the MAD counts as at least this fraction of the median
  double min_drop = 0.42;     // ... and only when this fraction of the median below it
  double min_busbw_gbs = 0;   // floors (profile or options); 0: none
  double min_stream_gbs = 0;
  // Where min_busbw_gbs comes from when a model predicts it (--model), for
  // the failure message; empty: a profile or --min-busbw floor.
  std::string busbw_floor_by;
  // --model: the floor of a bisection group of N nodes (its own shape's
  // prediction) and its message; nullopt or unset: the pair floor above.
  std::function<std::optional<std::pair<double, std::string>>(int nodes)> group_busbw_floor;
  int pairings = 2;           // first rounds of pairs: inside racks, then across (pairing.h)
  int retries = 6;            // re-measurements of a suspect; a majority failing names it
  int bisect_min_nodes = 16;  // bisect allreduce groups from this many nodes up
};

// One test of a round: a pair of nodes (allreduce and stream), or a larger
// allreduce group of the bisection.
struct NodeTest {
  std::vector<int> nodes;
  bool pair() const { return nodes.size() == 2; }
  // Filled in after the round:
  std::string error;      // a probe failed, timed out or a rank did not answer
  // The allreduce completed with wrong results (silent data corruption):
  // which rank and host saw it, the element and its bits. Its numbers stand.
  std::string corruption;
  double busbw_gbs = 0;   // the group's allreduce bus bandwidth
  double stream_gbs = 0;  // pairs: the two nodes' bidirectional stream rate
  int round = 0;
  bool retry = false;     // a re-measurement: judged, but not part of the fleet's bar
  // What a re-measurement re-measures: its first node (a suspect, with a
  // partner that passed), both nodes (two suspects of one rack without a
  // node that passed), the pair itself (a suspect link whose ends passed),
  // or nothing (a reference pair: the round's own yardstick).
  enum class Subject { Suspect, BothSuspects, Link, Reference };
  Subject subject = Subject::Suspect;
};

struct NodeVerdict {
  bool failed = false;
  std::vector<std::string> reasons;  // "what, with the numbers"
  std::string code;                  // the failure code of the first reason (smddp/results/failure_codes.h)
  std::string note;                  // a pass with a caveat (a partner lost), else empty
  std::optional<double> busbw_gbs, stream_gbs;  // the best of its passing pair tests
  int tests = 0;
};

// The most rounds an isolation of `nodes` nodes runs: 2 ceil(log2 N) + 4
// (issue 38's bound; 24 for 1,024 nodes). The schedule ends there and judges
// what it has.
int round_budget(int nodes);

// Median and median absolute deviation (0, 0 for none).
std::pair<double, double> median_mad(std::vector<double> values);

// What plans rounds of tests and judges them: isolate's Isolation, and the
// simulator's model of another tool's schedule (simulator.h).
class RoundSchedule {
 public:
  virtual ~RoundSchedule() = default;
  // The next round's tests; empty when the schedule is done.
  virtual std::vector<NodeTest> next_round() = 0;
  // The round's tests with their results; `dead` nodes had a rank that did not answer.
  virtual void record(std::vector<NodeTest> tests, const std::set<int>& dead) = 0;
  virtual int rounds() const = 0;
  virtual const std::vector<NodeTest>& tests() const = 0;
  // Per node, from everything recorded.
  virtual std::vector<NodeVerdict> verdicts() const = 0;
};

class Isolation final : public RoundSchedule {
 public:
  // `racks`: a rack number per node (topology.h's rack_ids), empty for one
  // rack; `seed` draws the pairings (pairing.h).
  Isolation(std::vector<std::string> labels, IsolateLimits limits, std::vector<int> racks = {}, uint64_t seed = 1);

  // Tests disjoint in nodes.
  std::vector<NodeTest> next_round() override;
  void record(std::vector<NodeTest> tests, const std::set<int>& dead) override;
  int rounds() const override { return round_; }
  const std::vector<NodeTest>& tests() const override { return history_; }
  std::vector<NodeVerdict> verdicts() const override;

 private:
  enum class Phase { Pairs, Third, Retry, Bisect, Confirm, Done };
  std::vector<int> alive() const;
  std::vector<NodeTest> pairing();
  std::vector<NodeTest> retry_round();

  std::vector<std::string> labels_;
  IsolateLimits limits_;
  std::vector<int> racks_;
  uint64_t seed_;
  int pairings_done_ = 0;
  std::set<int> sat_out_;  // nodes that sat out of a pairing round (odd counts)
  Phase phase_ = Phase::Pairs;
  int round_ = 0, retry_rounds_ = 0, confirm_rounds_ = 0;
  std::set<int> dead_;
  std::vector<NodeTest> history_;
  std::vector<std::vector<int>> bisect_groups_;  // groups to test in the next bisection round
  bool bisect_started_ = false;
};

}  // namespace smddp::diag
