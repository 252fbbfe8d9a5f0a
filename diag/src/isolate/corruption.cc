#include "isolate/corruption.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "smddp/results/failure_codes.h"

namespace smddp::diag {

CorruptionFindings judge_corruption(const std::vector<NodeTest>& tests, const std::vector<std::string>& labels, int retests,
                                    bool final) {
  const size_t n = labels.size();
  auto label = [&](int node) { return labels[static_cast<size_t>(node)]; };
  // Per node, each partner of a pair test with wrong results and the first such test.
  std::vector<std::map<int, const NodeTest*>> wrong_with(n);
  for (const auto& t : tests) {
    if (!t.pair() || t.corruption.empty()) continue;
    wrong_with[static_cast<size_t>(t.nodes[0])].emplace(t.nodes[1], &t);
    wrong_with[static_cast<size_t>(t.nodes[1])].emplace(t.nodes[0], &t);
  }
  // The nodes that returned right results in some pair test.
  std::vector<char> right_somewhere(n, 0);
  for (const auto& t : tests) {
    if (!t.pair() || !t.error.empty() || !t.corruption.empty()) continue;
    for (int m : t.nodes) right_somewhere[static_cast<size_t>(m)] = 1;
  }
  CorruptionFindings out;
  // A node is named on the word of two witnesses: partners of its wrong
  // tests that returned right results elsewhere and have fewer wrong
  // partners than it (a healthy node that met two bad ones has two wrong
  // partners too, but the bad ones are wrong with more, or never right).
  // Named nodes explain their tests, which may free witnesses for the
  // next; what stays ambiguous is re-tested, and at the end left to the
  // pair rule below.
  auto open_partners = [&](int node) {
    std::vector<int> partners;
    for (const auto& entry : wrong_with[static_cast<size_t>(node)]) {
      if (!out.named.count(entry.first)) partners.push_back(entry.first);
    }
    return partners;
  };
  for (bool more = true; more;) {
    more = false;
    std::vector<int> to_name;
    for (size_t i = 0; i < n; ++i) {
      const int node = static_cast<int>(i);
      if (out.named.count(node)) continue;
      const auto partners = open_partners(node);
      if (partners.size() < 2) continue;
      const auto witnesses = std::count_if(partners.begin(), partners.end(), [&](int p) {
        return right_somewhere[static_cast<size_t>(p)] && open_partners(p).size() < partners.size();
      });
      if (witnesses >= 2) to_name.push_back(node);
    }
    for (int node : to_name) {
      more = true;
      const auto& with = wrong_with[static_cast<size_t>(node)];
      std::vector<const NodeTest*> by_round;
      for (const auto& entry : with) by_round.push_back(entry.second);
      std::sort(by_round.begin(), by_round.end(), [](const NodeTest* x, const NodeTest* y) { return x->round < y->round; });
      std::vector<std::string> partners;
      for (const NodeTest* t : by_round) {
        partners.push_back(fmt::format("{} (round {})", label(t->nodes[0] == node ? t->nodes[1] : t->nodes[0]), t->round));
      }
      out.named[node] = {fmt::format("silent data corruption: wrong results with {} partners, {}: {}", with.size(),
                                     fmt::join(partners, ", "), by_round.front()->corruption),
                         results::code::kIsolateCorruption};
    }
  }
  for (size_t i = 0; i < n && !final; ++i) {
    const int node = static_cast<int>(i);
    if (!out.named.count(node) && open_partners(node).size() >= 2) out.retest.insert(node);
  }
  // Clean pair tests of `end` with partners other than `other` after `round`.
  auto clean_after = [&](int end, int other, int round) {
    return std::count_if(tests.begin(), tests.end(), [&](const NodeTest& u) {
      return u.pair() && u.round > round && u.error.empty() && u.corruption.empty() &&
             std::find(u.nodes.begin(), u.nodes.end(), end) != u.nodes.end() &&
             std::find(u.nodes.begin(), u.nodes.end(), other) == u.nodes.end();
    });
  };
  std::map<int, CorruptionFindings::Named> pair_named;
  for (size_t i = 0; i < n; ++i) {
    const int a = static_cast<int>(i);
    for (const auto& [b, t] : wrong_with[i]) {
      if (b < a || out.named.count(a) || out.named.count(b)) continue;
      const auto ca = clean_after(a, b, t->round), cb = clean_after(b, a, t->round);
      if (!final && (ca < retests || cb < retests)) {
        if (ca < retests) out.retest.insert(a);
        if (cb < retests) out.retest.insert(b);
        continue;
      }
      for (const auto& [end, other, clean] : {std::tuple(a, b, ca), std::tuple(b, a, cb)}) {
        pair_named.emplace(end, CorruptionFindings::Named{
                                    fmt::format("silent data corruption: wrong results with {} in round {}, not reproduced with "
                                                "other partners ({} clean test(s) since): the link or either node: {}",
                                                label(other), t->round, clean, t->corruption),
                                    results::code::kIsolateCorruptionUnplaced});
      }
    }
  }
  out.named.merge(pair_named);
  for (const auto& t : tests) {
    // A large group is bisected (judge.cc): its halves place the fault, or
    // their smallest groups are named here.
    if (t.pair() || t.corruption.empty() || t.nodes.size() > 3) continue;
    if (std::any_of(t.nodes.begin(), t.nodes.end(), [&](int m) { return out.named.count(m) > 0; })) continue;
    std::vector<std::string> names;
    for (int m : t.nodes) names.push_back(label(m));
    for (int m : t.nodes) {
      out.named.emplace(m, CorruptionFindings::Named{
                               fmt::format("silent data corruption: bisected allreduce group [{}] returned wrong results in round {}: {}",
                                           fmt::join(names, ", "), t.round, t.corruption),
                               results::code::kIsolateCorruptionUnplaced});
    }
  }
  return out;
}

}  // namespace smddp::diag
