#include "isolate/chs_schedule.h"

#include <fmt/format.h>

#include "isolate/pairing.h"

namespace smddp::diag {

ChsSchedule::ChsSchedule(int nodes, double threshold_gbs, uint64_t seed)
    : nodes_(nodes), threshold_(threshold_gbs), seed_(seed) {}

std::vector<NodeTest> ChsSchedule::next_round() {
  std::vector<NodeTest> out;
  SplitMix rng(seed_ ^ (0x5851F42D4C957F2Dull * static_cast<uint64_t>(round_ + 1)));
  auto add = [&](int a, int b) {
    NodeTest t;
    t.nodes = {a, b};
    t.round = round_ + 1;
    t.retry = round_ == 1;
    out.push_back(std::move(t));
  };
  if (round_ == 0 && nodes_ >= 2) {
    std::vector<int> order(static_cast<size_t>(nodes_));
    for (int i = 0; i < nodes_; ++i) order[static_cast<size_t>(i)] = i;
    rng.shuffle(order);
    for (size_t i = 0; i + 1 < order.size(); i += 2) add(order[i], order[i + 1]);
    if (order.size() % 2) {
      int other = static_cast<int>(rng.below(order.size() - 1));
      add(order.back(), order[static_cast<size_t>(other)]);
    }
  } else if (round_ == 1) {
    // Suspects: both nodes of every failing first-pass pair; partners: the
    // nodes that passed, shuffled, in turn.
    std::vector<char> suspect(static_cast<size_t>(nodes_), 0), passed(static_cast<size_t>(nodes_), 0);
    for (const auto& t : history_) {
      for (int n : t.nodes) (passes(t) ? passed : suspect)[static_cast<size_t>(n)] = 1;
    }
    std::vector<int> good;
    for (int n = 0; n < nodes_; ++n) {
      if (passed[static_cast<size_t>(n)] && !suspect[static_cast<size_t>(n)]) good.push_back(n);
    }
    rng.shuffle(good);
    size_t next = 0;
    for (int n = 0; n < nodes_ && !good.empty(); ++n) {
      if (suspect[static_cast<size_t>(n)]) add(n, good[next++ % good.size()]);
    }
  }
  if (!out.empty()) ++round_;
  return out;
}

void ChsSchedule::record(std::vector<NodeTest> tests, const std::set<int>&) {
  for (auto& t : tests) history_.push_back(std::move(t));
}

std::vector<NodeVerdict> ChsSchedule::verdicts() const {
  // A node that passed its first pass stays passed; a suspect is named unless
  // its second-pass test passed (or it had none: no node passed).
  std::vector<NodeVerdict> v(static_cast<size_t>(nodes_));
  std::vector<int> first(static_cast<size_t>(nodes_), 0), second(static_cast<size_t>(nodes_), 0);  // 0 none, 1 pass, 2 fail
  std::vector<std::string> why(static_cast<size_t>(nodes_));
  for (const auto& t : history_) {
    for (size_t e = 0; e < t.nodes.size(); ++e) {
      const auto n = static_cast<size_t>(t.nodes[e]);
      ++v[n].tests;
      if (t.error.empty()) {
        v[n].busbw_gbs = std::max(v[n].busbw_gbs.value_or(0), t.busbw_gbs);
      }
      if (t.retry && e != 0) continue;  // second pass: the suspect is the first node
      const bool ok = passes(t);
      int& state = t.retry ? second[n] : first[n];
      if (!ok) {
        state = 2;
        why[n] = t.error.empty() ? fmt::format("pair test busbw {:.3f} GB/s below the threshold {:.3f} GB/s", t.busbw_gbs, threshold_)
                                 : t.error;
      } else if (state == 0) {
        state = 1;
      }
    }
  }
  for (int n = 0; n < nodes_; ++n) {
    const auto i = static_cast<size_t>(n);
    if (first[i] == 2 && second[i] != 1) {
      v[i].failed = true;
      v[i].reasons.push_back(why[i] + (second[i] == 2 ? " (re-paired once, failed again)" : ""));
    }
  }
  return v;
}

}  // namespace smddp::diag
