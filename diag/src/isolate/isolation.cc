// The schedule of smddp-diag isolate (Isolation, verdict.h): which tests
// each round runs; judge.h decides what they found.
#include "isolate/verdict.h"

#include <algorithm>
#include <limits>

#include "isolate/judge.h"
#include "isolate/pairing.h"

namespace smddp::diag {

Isolation::Isolation(std::vector<std::string> labels, IsolateLimits limits, std::vector<int> racks, uint64_t seed)
    : labels_(std::move(labels)), limits_(std::move(limits)), racks_(std::move(racks)), seed_(seed) {
  if (racks_.size() != labels_.size()) racks_.assign(labels_.size(), 0);
}

namespace {

NodeTest make_test(std::vector<int> nodes) {
  NodeTest t;
  t.nodes = std::move(nodes);
  return t;
}

}  // namespace

std::vector<int> Isolation::alive() const {
  // The nodes left to test: not the silent ones, nor those whose partner
  // went silent (whoever met them next would measure the lost test's
  // leftovers: partner_lost_rounds).
  const std::vector<int> lost_at = partner_lost_rounds(history_, dead_, labels_.size());
  std::vector<int> out;
  for (int n = 0; n < static_cast<int>(labels_.size()); ++n) {
    if (!dead_.count(n) && lost_at[static_cast<size_t>(n)] == std::numeric_limits<int>::max()) out.push_back(n);
  }
  return out;
}

std::vector<NodeVerdict> Isolation::verdicts() const { return judge(history_, labels_, dead_, limits_, true).nodes; }

std::vector<NodeTest> Isolation::retry_round() {
  const Judgement j = judge(history_, labels_, dead_, limits_, false);
  std::set<NodePair> met;
  for (const auto& t : history_) {
    if (t.pair()) met.insert(pair_of(t));
  }
  auto rack = [&](int node) { return racks_[static_cast<size_t>(node)]; };
  std::set<int> used;
  std::vector<NodeTest> out;
  auto add = [&](int a, int c, NodeTest::Subject subject) {
    NodeTest t = make_test({a, c});
    t.retry = true;
    t.subject = subject;
    used.insert(a);
    used.insert(c);
    out.push_back(std::move(t));
  };
  // Partners: nodes never suspected, then suspects already cleared.
  std::vector<int> passed, cleared;
  for (int node : alive()) {
    if (j.node_failed.count(node) || j.undecided.count(node)) continue;
    (j.suspects.count(node) ? cleared : passed).push_back(node);
  }
  // The suspects with the most failed tests choose first: a slow node is
  // never starved of partners by the nodes that only met it.
  std::vector<int> order(j.undecided.begin(), j.undecided.end());
  std::stable_sort(order.begin(), order.end(), [&](int a, int c) {
    return j.failures[static_cast<size_t>(a)] > j.failures[static_cast<size_t>(c)];
  });
  for (int s : order) {
    if (used.count(s)) continue;
    // Its own rack first (the shortest path: the node's own numbers; a slow
    // uplink must not condemn the nodes below it), a partner it has not met
    // before one it has, one that passed before one that was cleared; a
    // rack without either pairs two of its suspects (again only when both
    // passed a first test: a bad node must not drag a good one down); then
    // another rack.
    int pick = -1;
    NodeTest::Subject subject = NodeTest::Subject::Suspect;
    auto try_pick = [&](const std::vector<int>& from, bool same_rack, bool new_only) {
      for (int g : from) {
        if (pick >= 0) return;
        if (g == s || used.count(g) || (same_rack && rack(g) != rack(s)) || (new_only && met.count({std::min(s, g), std::max(s, g)}))) continue;
        pick = g;
      }
    };
    const std::vector<int> others(j.undecided.begin(), j.undecided.end());
    try_pick(passed, true, true);
    try_pick(cleared, true, true);
    if (pick < 0) {
      try_pick(others, true, true);
      if (pick >= 0) subject = NodeTest::Subject::BothSuspects;
    }
    try_pick(passed, true, false);
    try_pick(cleared, true, false);
    if (pick < 0 && !j.bad_so_far[static_cast<size_t>(s)]) {
      std::vector<int> mild;  // suspects that passed a first test
      for (int o : others) {
        if (!j.bad_so_far[static_cast<size_t>(o)]) mild.push_back(o);
      }
      try_pick(mild, true, false);
      if (pick >= 0) subject = NodeTest::Subject::BothSuspects;
    }
    try_pick(passed, false, true);
    try_pick(cleared, false, true);
    try_pick(passed, false, false);
    try_pick(cleared, false, false);
    if (pick >= 0) add(s, pick, subject);
  }
  for (const auto& [a, c] : j.links_undecided) {
    if (!used.count(a) && !used.count(c)) add(a, c, NodeTest::Subject::Link);
  }
  // The nodes that passed and are left over test each other at the same
  // time: the round's own reference, under the same load as the suspects'.
  if (!out.empty()) {
    std::vector<int> rest;
    for (const auto* from : {&passed, &cleared}) {
      for (int g : *from) {
        if (!used.count(g)) rest.push_back(g);
      }
    }
    for (size_t i = 0; i + 1 < rest.size(); i += 2) add(rest[i], rest[i + 1], NodeTest::Subject::Reference);
  }
  return out;
}

std::vector<NodeTest> Isolation::pairing() {
  std::set<NodePair> earlier;
  for (const auto& t : history_) {
    if (t.pair()) earlier.insert(pair_of(t));
  }
  const std::vector<int> live = alive();
  std::vector<NodeTest> out;
  std::set<int> in;
  for (const auto& [a, b] : pairing_round(pairings_done_, live, racks_, seed_, earlier, sat_out_)) {
    out.push_back(make_test({a, b}));
    in.insert(a);
    in.insert(b);
  }
  for (int node : live) {
    if (!in.count(node)) sat_out_.insert(node);
  }
  // The nodes whose partner went silent test each other: judged for
  // neither end, but a rank of theirs that stops answering too is seen.
  const std::vector<int> lost_at = partner_lost_rounds(history_, dead_, labels_.size());
  int waiting = -1;
  for (int node = 0; node < static_cast<int>(labels_.size()); ++node) {
    if (dead_.count(node) || lost_at[static_cast<size_t>(node)] == std::numeric_limits<int>::max()) continue;
    if (waiting < 0) {
      waiting = node;
    } else {
      out.push_back(make_test({waiting, node}));
      waiting = -1;
    }
  }
  return out;
}

int round_budget(int nodes) {
  int log2 = 0;
  while ((int64_t{1} << log2) < nodes) ++log2;
  return 2 * log2 + 4;
}

std::vector<NodeTest> Isolation::next_round() {
  std::vector<NodeTest> out;
  if (round_ >= round_budget(static_cast<int>(labels_.size()))) phase_ = Phase::Done;
  const std::vector<int> live = alive();
  while (out.empty() && phase_ != Phase::Done) {
    switch (phase_) {
      case Phase::Pairs:
        // Inside racks, then across (pairing.h), so every node has partners
        // of both kinds and one bad node cannot condemn a good one; two
        // nodes test their one pair in each round.
        out = pairing();
        if (++pairings_done_ >= std::max(limits_.pairings, 1)) phase_ = live.size() == 3 && pairings_done_ < 3 ? Phase::Third : Phase::Retry;
        break;
      case Phase::Third:
        // Three nodes: the pair not met yet, so all three are tested.
        out = pairing();
        phase_ = Phase::Retry;
        break;
      case Phase::Retry: {
        // Suspects are decided within --retries rounds; their links, re-tested
        // once both ends are cleared, within as many more; the bisection's
        // rounds are kept out of the budget.
        int bisect_rounds = 0;
        if (static_cast<int>(live.size()) >= std::max(limits_.bisect_min_nodes, 4)) {
          for (bisect_rounds = 1; 3 << (bisect_rounds - 1) < static_cast<int>(live.size()); ++bisect_rounds) {
          }
        }
        if (retry_rounds_ < 2 * limits_.retries && round_ + bisect_rounds < round_budget(static_cast<int>(labels_.size()))) {
          out = retry_round();
        }
        if (out.empty()) phase_ = Phase::Bisect;
        retry_rounds_ += !out.empty();
        break;
      }
      case Phase::Confirm:
        // The failing small groups of the bisection, re-tested as they are.
        if (confirm_rounds_++ < limits_.retries) {
          for (auto& g : judge(history_, labels_, dead_, limits_, false).groups_undecided) {
            out.push_back(make_test(g));
            out.back().retry = true;
          }
        }
        if (out.empty()) phase_ = Phase::Done;
        break;
      case Phase::Bisect: {
        if (!bisect_started_) {
          bisect_started_ = true;
          std::vector<int> group;
          const Judgement j = judge(history_, labels_, dead_, limits_, false);
          for (int node : live) {
            if (!j.node_failed.count(node) && !j.undecided.count(node)) group.push_back(node);
          }
          // Rack by rack, so the halves split along racks.
          std::stable_sort(group.begin(), group.end(), [&](int a, int b) { return racks_[static_cast<size_t>(a)] < racks_[static_cast<size_t>(b)]; });
          if (static_cast<int>(group.size()) >= std::max(limits_.bisect_min_nodes, 4)) bisect_groups_.push_back(group);
        }
        for (auto& g : bisect_groups_) out.push_back(make_test(g));
        bisect_groups_.clear();
        // The nodes of failing small groups are then re-measured in pairs.
        if (out.empty()) phase_ = Phase::Confirm;
        break;
      }
      case Phase::Done:
        break;
    }
  }
  if (!out.empty()) ++round_;
  for (auto& t : out) t.round = round_;
  return out;
}

void Isolation::record(std::vector<NodeTest> tests, const std::set<int>& dead) {
  dead_.insert(dead.begin(), dead.end());
  const bool bisecting = phase_ == Phase::Bisect;
  for (auto& t : tests) history_.push_back(std::move(t));
  if (!bisecting) return;
  // The failing groups of this round are split for the next one.
  const Judgement j = judge(history_, labels_, dead_, limits_, false);
  for (const auto& t : history_) {
    if (t.round != round_ || t.pair() || t.nodes.size() <= 3) continue;
    const bool bad = std::find(j.bad_groups.begin(), j.bad_groups.end(), t.nodes) != j.bad_groups.end();
    if (!bad) continue;
    const size_t half = t.nodes.size() / 2;
    std::vector<int> left, right;
    for (size_t i = 0; i < t.nodes.size(); ++i) {
      if (dead_.count(t.nodes[i])) continue;
      (i < half ? left : right).push_back(t.nodes[i]);
    }
    for (auto* g : {&left, &right}) {
      if (g->size() >= 2) bisect_groups_.push_back(*g);
    }
  }
}

}  // namespace smddp::diag
