#include "isolate/judge.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

#include "isolate/corruption.h"
#include "smddp/results/failure_codes.h"

namespace smddp::diag {

std::pair<double, double> median_mad(std::vector<double> values) {
  if (values.empty()) return {0, 0};
  auto median = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  const double m = median(values);
  for (auto& v : values) v = std::fabs(v - m);
  return {m, median(values)};
}

NodePair pair_of(const NodeTest& t) { return {std::min(t.nodes[0], t.nodes[1]), std::max(t.nodes[0], t.nodes[1])}; }

std::vector<int> partner_lost_rounds(const std::vector<NodeTest>& tests, const std::set<int>& dead, size_t n) {
  std::vector<int> at(n, std::numeric_limits<int>::max());
  for (const auto& t : tests) {
    if (!t.pair() || t.error.empty()) continue;
    for (size_t end = 0; end < 2; ++end) {
      const int node = t.nodes[end], other = t.nodes[1 - end];
      if (dead.count(other) && !dead.count(node)) at[static_cast<size_t>(node)] = std::min(at[static_cast<size_t>(node)], t.round);
    }
  }
  return at;
}

namespace {

// Re-measurements decide a suspect (node or link): named when a majority of
// --retries fail (more than half), cleared once that majority is out of
// reach. Tests after the decision are not counted, so it never flips.
struct Tally {
  int failed = 0, passed = 0;
  static int needed(const IsolateLimits& l) { return l.retries / 2 + 1; }
  bool named(const IsolateLimits& l) const { return l.retries > 0 && failed >= needed(l); }
  bool cleared(const IsolateLimits& l) const { return l.retries > 0 && passed > l.retries - needed(l); }
  void add(bool fails, const IsolateLimits& l) {
    if (!named(l) && !cleared(l)) (fails ? failed : passed) += 1;
  }
};

// `values`: each node's best first-pairing test; `tests`: those tests.
Bar make_bar(const std::vector<double>& values, const std::vector<double>& tests, double floor, const IsolateLimits& l,
             std::string floor_by = "") {
  Bar b;
  b.floor = floor;
  b.floor_by = std::move(floor_by);
  if (values.size() >= 3) {
    // The median of the nodes' best tests (a slow partner drags no node
    // down); the spread of the tests that clear min_drop, as a fraction of
    // their median: noise widens it, slow nodes (below that bar), however
    // many, cannot widen the bar that is to find them.
    const double m = median_mad(values).first;
    std::vector<double> kept;
    for (double v : tests) {
      if (v >= (1 - l.min_drop) * m) kept.push_back(v);
    }
    const auto [mk, dk] = median_mad(kept);
    const double d = kept.size() >= 3 && mk > 0 ? dk / mk * m : 0;
    b.fleet = true;
    b.median = m;
    b.mad = std::max(d, l.mad_floor * m);
    b.k = l.mad_k;
    b.min_drop = l.min_drop;
    b.threshold = m - std::max(l.mad_k * b.mad, l.min_drop * m);
  }
  return b;
}

// The yardsticks of the re-measurements: each round's error-free pair
// re-measurements, each metric's values sorted, less those of the nodes
// whose every first test failed (where many nodes are bad, their tests
// must not become the norm).
struct RoundValues {
  std::map<int, std::vector<double>> busbw, stream;  // by round
  std::vector<const NodeTest*> retries;              // the same tests
  std::set<const NodeTest*> in;
  const std::vector<NodeTest>* all = nullptr;        // every test
  const std::map<int, std::vector<double>>& of(double NodeTest::*metric) const {
    return metric == &NodeTest::busbw_gbs ? busbw : stream;
  }
};

RoundValues round_values(const std::vector<NodeTest>& tests, const std::vector<char>& bad_so_far) {
  RoundValues rv;
  rv.all = &tests;
  for (const auto& t : tests) {
    if (!t.pair() || !t.retry || !t.error.empty()) continue;
    if (bad_so_far[static_cast<size_t>(t.nodes[0])] || bad_so_far[static_cast<size_t>(t.nodes[1])]) continue;
    rv.busbw[t.round].push_back(t.busbw_gbs);
    rv.stream[t.round].push_back(t.stream_gbs);
    rv.retries.push_back(&t);
    rv.in.insert(&t);
  }
  for (auto* m : {&rv.busbw, &rv.stream}) {
    for (auto& [round, v] : *m) std::sort(v.begin(), v.end());
  }
  return rv;
}

// The median of `sorted` less one occurrence of `v` (one of its values);
// nullopt when nothing is left.
std::optional<double> median_without(const std::vector<double>& sorted, double v) {
  if (sorted.size() < 2) return std::nullopt;
  const size_t skip = static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), v) - sorted.begin());
  auto at = [&](size_t p) { return sorted[p < skip ? p : p + 1]; };
  const size_t m = sorted.size() - 1;
  return m % 2 ? at(m / 2) : (at(m / 2 - 1) + at(m / 2)) / 2;
}

// A metric of an error-free pair test below its bar: the floor, or the
// bar's fraction of its reference: the fleet's median for the first
// pairings (everyone measured alike), for a re-measurement the median of
// the other re-measurements of its round (what the fabric gave at that
// moment), else of the other nodes' re-measurements, else the fleet's.
bool below(const RoundValues& rv, const NodeTest& t, const Bar& bar, double NodeTest::*metric) {
  const double v = t.*metric;
  if (bar.floor > 0 && v < bar.floor) return true;
  if (!bar.fleet) return false;
  std::optional<double> reference;
  if (t.retry) {
    const auto& by_round = rv.of(metric);
    if (auto it = by_round.find(t.round); it != by_round.end()) {
      reference = rv.in.count(&t) ? median_without(it->second, v) : median_mad(it->second).first;
    }
    if (!reference) {
      std::vector<double> others;
      for (const NodeTest* o : rv.retries) {
        if (std::find_first_of(o->nodes.begin(), o->nodes.end(), t.nodes.begin(), t.nodes.end()) == o->nodes.end()) {
          others.push_back(o->*metric);
        }
      }
      if (!others.empty()) reference = median_mad(others).first;
    }
    if (!reference) {
      // Only bad-looking nodes re-measured beside it: theirs still tell
      // how the fabric runs now, better than the fleet's earlier median.
      std::vector<double> others;
      for (const auto& o : *rv.all) {
        if (&o == &t || !o.pair() || !o.retry || !o.error.empty()) continue;
        if (std::find_first_of(o.nodes.begin(), o.nodes.end(), t.nodes.begin(), t.nodes.end()) == o.nodes.end()) others.push_back(o.*metric);
      }
      if (!others.empty()) reference = median_mad(others).first;
    }
  }
  return v < bar.fraction() * reference.value_or(bar.median);
}

// Why the tests of a node or link failed: each metric whose best
// first-pairing value misses the fleet's bar (else the lower of the two),
// and its re-measurements.
std::string failure_text(const Judgement& j, double best_b, double best_s, const Tally& t, const IsolateLimits& l) {
  std::vector<std::string> parts;
  const bool low_b = j.busbw.low(best_b), low_s = j.stream.low(best_s);
  const double rb = j.busbw.median > 0 ? best_b / j.busbw.median : 1, rs = j.stream.median > 0 ? best_s / j.stream.median : 1;
  if (low_b || (!low_s && rb <= rs)) parts.push_back(j.busbw.why("allreduce busbw", best_b, l.mad_k));
  if (low_s || (!low_b && rs < rb)) parts.push_back(j.stream.why("bidirectional bandwidth", best_s, l.mad_k));
  std::string why = fmt::format("{}", fmt::join(parts, "; "));
  if (t.failed + t.passed > 0) {
    why += fmt::format("; re-measured {} time(s), {} below its round", t.failed + t.passed, t.failed);
  }
  return why;
}

}  // namespace

Judgement judge(const std::vector<NodeTest>& history, const std::vector<std::string>& labels, const std::set<int>& dead,
                const IsolateLimits& l, bool final) {
  const size_t n = labels.size();
  // The tests after a node lost its partner, whoever met it, are not judged
  // (the schedule pairs such nodes only with each other then; this holds
  // for any schedule).
  const std::vector<int> lost_at = partner_lost_rounds(history, dead, n);
  std::vector<NodeTest> tests;
  for (const auto& t : history) {
    if (std::none_of(t.nodes.begin(), t.nodes.end(), [&](int x) { return lost_at[static_cast<size_t>(x)] < t.round; })) tests.push_back(t);
  }
  Judgement j;
  j.nodes.resize(n);
  // The fleet's bar from each node's best test of the first pairings (one
  // slow partner cannot drag a node down, and a slow node's partners keep
  // the median up, however small the fleet); re-measurements (often alone
  // on the fabric) clear or condemn a suspect but do not move it.
  std::vector<double> best_b(n, 0), best_s(n, 0);
  std::vector<char> has_best(n, 0);
  for (const auto& t : tests) {
    if (!t.pair() || t.retry || !t.error.empty()) continue;
    for (int node : t.nodes) {
      const auto i = static_cast<size_t>(node);
      has_best[i] = 1;
      best_b[i] = std::max(best_b[i], t.busbw_gbs);
      best_s[i] = std::max(best_s[i], t.stream_gbs);
    }
  }
  std::vector<double> b, s, tb, ts;
  for (size_t i = 0; i < n; ++i) {
    if (!has_best[i]) continue;
    b.push_back(best_b[i]);
    s.push_back(best_s[i]);
  }
  for (const auto& t : tests) {
    if (!t.pair() || t.retry || !t.error.empty()) continue;
    tb.push_back(t.busbw_gbs);
    ts.push_back(t.stream_gbs);
  }
  j.busbw = make_bar(b, tb, l.min_busbw_gbs, l, l.busbw_floor_by);
  j.stream = make_bar(s, ts, l.min_stream_gbs, l);

  // The nodes whose every first test failed: their re-measurements are no
  // yardstick for the others'.
  std::vector<char> bad_so_far(n, 0);
  {
    RoundValues none;
    none.all = &tests;
    std::vector<int> tested(n), failed(n);
    for (const auto& t : tests) {
      if (!t.pair() || t.retry) continue;
      if (!t.error.empty() && (dead.count(t.nodes[0]) || dead.count(t.nodes[1]))) continue;
      const bool fails = !t.error.empty() || below(none, t, j.busbw, &NodeTest::busbw_gbs) || below(none, t, j.stream, &NodeTest::stream_gbs);
      for (int node : t.nodes) {
        ++tested[static_cast<size_t>(node)];
        failed[static_cast<size_t>(node)] += fails;
      }
    }
    for (size_t i = 0; i < n; ++i) bad_so_far[i] = tested[i] > 0 && failed[i] == tested[i];
  }
  const RoundValues rv = round_values(tests, bad_so_far);
  std::vector<std::vector<std::string>> errors(n);
  std::vector<int> first_failed(n), failed_tests(n), judged_tests(n);
  std::vector<Tally> tally(n);
  std::map<NodePair, std::vector<const NodeTest*>> by_pair;
  std::map<NodePair, Tally> link_tally;
  std::map<NodePair, std::pair<double, double>> link_best;
  std::set<NodePair> link_suspect;
  // A node whose partner was lost mid-test may still carry that test's
  // requests in flight (its progress engine polls them), so its later
  // numbers say nothing about a link: its links are not judged this run.
  std::set<int> partner_lost;
  for (const auto& t : tests) {
    if (!t.pair()) continue;
    const NodePair p = pair_of(t);
    by_pair[p].push_back(&t);
    // A test with a silent end says nothing about the other.
    const bool lost = !t.error.empty() && (dead.count(t.nodes[0]) || dead.count(t.nodes[1]));
    const bool fails = !t.error.empty() || below(rv, t, j.busbw, &NodeTest::busbw_gbs) || below(rv, t, j.stream, &NodeTest::stream_gbs);
    for (int node : t.nodes) {
      const auto i = static_cast<size_t>(node);
      const int other = t.nodes[0] == node ? t.nodes[1] : t.nodes[0];
      auto& v = j.nodes[i];
      ++v.tests;
      if (!t.error.empty()) {
        errors[i].push_back(fmt::format("round {} with {}: {}", t.round, labels[static_cast<size_t>(other)], t.error));
        if (dead.count(other)) partner_lost.insert(node);
      } else {
        v.busbw_gbs = std::max(v.busbw_gbs.value_or(0), t.busbw_gbs);
        v.stream_gbs = std::max(v.stream_gbs.value_or(0), t.stream_gbs);
      }
      if (lost) continue;
      ++judged_tests[i];
      failed_tests[i] += fails;
      if (!t.retry) {
        first_failed[i] += fails;
      }
    }
    if (lost) continue;
    if (!t.retry) {
      if (fails) link_suspect.insert(p);
      if (t.error.empty()) {
        auto& [lb, ls] = link_best[p];
        lb = std::max(lb, t.busbw_gbs);
        ls = std::max(ls, t.stream_gbs);
      }
    } else if (t.subject == NodeTest::Subject::Suspect) {
      tally[static_cast<size_t>(t.nodes[0])].add(fails, l);
    } else if (t.subject == NodeTest::Subject::BothSuspects) {
      for (int node : t.nodes) tally[static_cast<size_t>(node)].add(fails, l);
    } else if (t.subject == NodeTest::Subject::Link) {
      link_tally[p].add(fails, l);
    }
  }
  // Bisection: the groups that failed. A failing group of two or three is
  // re-tested as it is (a fault may show only with all of them) and named
  // when a majority of its re-tests fail too.
  std::map<std::vector<int>, std::pair<Tally, std::string>> small;  // failing small groups: re-tests, why
  for (const auto& t : tests) {
    if (t.pair()) continue;
    Bar bar = j.busbw;  // a model predicts each group size on its own
    if (l.group_busbw_floor) {
      if (auto f = l.group_busbw_floor(static_cast<int>(t.nodes.size()))) std::tie(bar.floor, bar.floor_by) = *f;
    }
    const bool fails = !t.error.empty() || bar.low(t.busbw_gbs);
    if (t.retry) {
      if (auto it = small.find(t.nodes); it != small.end()) it->second.first.add(fails, l);
      continue;
    }
    // Wrong results are bisected like a slow group, to a node or a small
    // group (judge_corruption names them).
    if (!fails && t.corruption.empty()) continue;
    j.bad_groups.push_back(t.nodes);
    if (!fails) continue;
    if (t.nodes.size() <= 3) small[t.nodes].second = !t.error.empty() ? t.error : bar.why("allreduce busbw", t.busbw_gbs, l.mad_k);
  }
  for (const auto& [group, state] : small) {
    const auto& [t, what] = state;
    if (!t.named(l) && l.retries > 0) {
      if (!t.cleared(l) && !final) j.groups_undecided.push_back(group);
      continue;
    }
    std::vector<std::string> names;
    for (int node : group) names.push_back(labels[static_cast<size_t>(node)]);
    const std::string why = fmt::format("bisected allreduce group [{}] fails though its pairs pass: {}{}", fmt::join(names, ", "), what,
                                        t.failed > 0 ? fmt::format("; re-tested {} time(s), {} failed", t.failed + t.passed, t.failed) : "");
    for (int node : group) {
      auto& v = j.nodes[static_cast<size_t>(node)];
      v.reasons.push_back(why);
      if (v.code.empty()) v.code = results::code::kIsolateSlowGroup;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    auto& v = j.nodes[i];
    const int node = static_cast<int>(i);
    if (dead.count(node)) {
      // First: what the node's code says (a node that stopped is not also slow).
      v.reasons.insert(v.reasons.begin(),
                       "a rank did not answer: " + (errors[i].empty() ? std::string("stopped or lost") : errors[i].back()));
      v.code = results::code::kIsolateUnreachable;
    } else if (judged_tests[i] > 0 && !v.busbw_gbs) {
      // Its own tests failed (a test whose partner went silent is not its own).
      v.reasons.insert(v.reasons.begin(), "every pair test failed: " + errors[i].front() +
                          (errors[i].size() > 1 ? fmt::format(" (and {} more)", errors[i].size() - 1) : ""));
      v.code = results::code::kIsolateProbeFailed;
    } else if (first_failed[i] > 0) {
      j.suspects.insert(node);
      const Tally& t = tally[i];
      // A suspect whose partner then went silent cannot be re-measured
      // (partner_lost_rounds): named only by a majority already reached,
      // never on its first tests alone.
      const bool sidelined = lost_at[i] != std::numeric_limits<int>::max();
      // Still undecided at the end (the round budget, or no partner): named
      // when most of its re-measurements failed, or, with none, every test.
      const bool open = !t.named(l) && !t.cleared(l) && (final || l.retries == 0) && !sidelined;
      const bool named = t.named(l) || (open && (t.failed + t.passed > 0 ? t.failed > t.passed : failed_tests[i] == judged_tests[i]));
      if (named) {
        v.reasons.insert(v.reasons.begin(), failure_text(j, best_b[i], best_s[i], t, l));
        v.code = results::code::kIsolateSlowNode;
      } else if (!t.cleared(l) && !final && l.retries > 0 && !sidelined) {
        j.undecided.insert(node);
      }
    }
    if (!v.reasons.empty()) j.node_failed.insert(node);
  }
  // Wrong results outrank slowness: the node is replaced, not re-measured.
  // An intermittent fault reproduces only sometimes: each end gets every
  // re-test (--retries) before a wrong result is left unplaced.
  const CorruptionFindings corrupt = judge_corruption(tests, labels, l.retries, final);
  for (const auto& [node, named] : corrupt.named) {
    if (dead.count(node)) continue;
    auto& v = j.nodes[static_cast<size_t>(node)];
    v.reasons.insert(v.reasons.begin(), named.why);
    v.code = named.code;
    j.node_failed.insert(node);
    j.undecided.erase(node);
  }
  for (int node : corrupt.retest) {
    if (j.node_failed.count(node) || dead.count(node)) continue;
    j.undecided.insert(node);
    j.suspects.insert(node);
  }
  // Links: a pair whose first test failed while both ends pass on their own
  // numbers, re-tested as a pair (a link is never named on one test when
  // re-tests are allowed).
  for (const auto& p : link_suspect) {
    const auto [a, c] = p;
    if (j.node_failed.count(a) || j.node_failed.count(c) || j.undecided.count(a) || j.undecided.count(c)) continue;
    if (partner_lost.count(a) || partner_lost.count(c)) continue;
    const Tally& t = link_tally[p];
    const auto& list = by_pair[p];
    const bool all_failed = std::all_of(list.begin(), list.end(), [&](const NodeTest* x) {
      return !x->error.empty() || below(rv, *x, j.busbw, &NodeTest::busbw_gbs) || below(rv, *x, j.stream, &NodeTest::stream_gbs);
    });
    const bool named = t.named(l) || (!t.cleared(l) && l.retries == 0 && all_failed) ||
                       (!t.cleared(l) && final && all_failed && list.size() >= 2);
    if (named) {
      const auto [lb, ls] = link_best[p];
      const std::string why = failure_text(j, lb, ls, t, l);
      for (int end : {a, c}) {
        const int other = end == a ? c : a;
        auto& v = j.nodes[static_cast<size_t>(end)];
        v.reasons.push_back(
            fmt::format("link to {} (both ends pass with other nodes): {}", labels[static_cast<size_t>(other)], why));
        if (v.code.empty()) v.code = results::code::kIsolateSlowLink;
      }
    } else if (!t.cleared(l) && !final && l.retries > 0) {
      j.links_undecided.insert(p);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    auto& v = j.nodes[i];
    v.failed = !v.reasons.empty();
    // A survivor of a lost partner passes on what it had, and says so.
    if (!v.failed && !dead.count(static_cast<int>(i)) && lost_at[i] != std::numeric_limits<int>::max()) {
      v.note = fmt::format("not judged after round {}: its partner stopped answering, and its requests to it may still be in flight",
                           lost_at[i]);
    }
  }
  j.failures = std::move(failed_tests);
  j.bad_so_far = std::move(bad_so_far);
  return j;
}

}  // namespace smddp::diag
