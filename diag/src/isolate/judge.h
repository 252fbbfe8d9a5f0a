// The judge of smddp-diag isolate (internal to isolate/): what the tests
// recorded so far say about each node and link, for the schedule
// (isolation.cc) to plan the next round and for the final verdicts.
#pragma once

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "isolate/pairing.h"
#include "isolate/verdict.h"

namespace smddp::diag {

// What a metric must reach: the floor, and, once three tests give a value,
// the fleet's median less K MADs (the MAD at least mad_floor of the median)
// and less min_drop of the median, whichever is lower: noise on a busy
// fleet widens the MAD, and a quiet fleet's tiny MAD cannot fail a node for
// a dip that no operator would drain it for. The median and MAD are of each
// node's best test of the first pairings, where every node was measured alike.
struct Bar {
  double floor = 0, median = 0, mad = 0, threshold = 0, k = 0, min_drop = 0;
  bool fleet = false;
  std::string floor_by;  // the model behind the floor, or empty
  std::string why(const char* what, double v, double) const {
    if (floor > 0 && v < floor) {
      return fmt::format("{} {:.3f} GB/s below the floor {:.3f} GB/s{}", what, v, floor, floor_by.empty() ? "" : " (" + floor_by + ")");
    }
    return fmt::format("{} {:.3f} GB/s is {:.1f} MADs below the fleet median {:.3f} GB/s ({:.0f} % below; MAD {:.3f}, limits {} "
                       "MADs and {:.0f} %)",
                       what, v, mad > 0 ? (median - v) / mad : 0.0, median, median > 0 ? 100 * (median - v) / median : 0.0,
                       mad, k, 100 * min_drop);
  }
  bool low(double v) const { return (floor > 0 && v < floor) || (fleet && v < threshold); }
  // The bar as a fraction of a reference: a re-measurement is held to the
  // same fraction of its own round's median.
  double fraction() const { return fleet && median > 0 ? threshold / median : 0; }
};

struct Judgement {
  std::vector<NodeVerdict> nodes;
  std::set<int> node_failed;             // named by its own numbers, or silent
  std::set<int> undecided;               // suspects to re-measure
  std::set<int> suspects;                // ever suspected (their first tests or a bisected group failed)
  std::set<NodePair> links_undecided;    // suspect links, both ends passing, to re-test
  std::vector<std::vector<int>> groups_undecided;  // failing small bisection groups to re-test
  std::vector<int> failures;             // per node: its failed tests
  std::vector<char> bad_so_far;          // per node: every first test of its failed
  std::vector<std::vector<int>> bad_groups;  // bisection groups that failed
  Bar busbw, stream;
};

NodePair pair_of(const NodeTest& t);

// Per node, the round in which its partner did not answer (INT_MAX: never).
// Such a node may still carry that test's requests in flight (its progress
// engine polls them until the job ends), so it measures slow with whoever
// it meets next: its later numbers say nothing about it or its partners.
std::vector<int> partner_lost_rounds(const std::vector<NodeTest>& tests, const std::set<int>& dead, size_t n);

// `final`: the schedule has ended, so suspects still undecided are judged
// on what they have (named when every test of theirs failed).
Judgement judge(const std::vector<NodeTest>& history, const std::vector<std::string>& labels, const std::set<int>& dead,
                const IsolateLimits& l, bool final);

}  // namespace smddp::diag
