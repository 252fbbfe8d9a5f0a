#include "isolate/verdict.h"

#include "smddp/results/failure_codes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

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

Isolation::Isolation(std::vector<std::string> labels, IsolateLimits limits)
    : labels_(std::move(labels)), limits_(limits) {}

std::vector<int> Isolation::alive() const {
  std::vector<int> out;
  for (int n = 0; n < static_cast<int>(labels_.size()); ++n) {
    if (!dead_.count(n)) out.push_back(n);
  }
  return out;
}

namespace {

NodeTest make_test(std::vector<int> nodes) {
  NodeTest t;
  t.nodes = std::move(nodes);
  return t;
}

// What a metric must reach: the floor, and, once three nodes give a value,
// the fleet's median less K MADs (the MAD at least mad_floor of the median)
// and less min_drop of the median, whichever is lower: noise on a busy
// fleet widens the MAD, and a quiet fleet's tiny MAD cannot fail a node for
// a dip that no operator would drain it for.
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
};

Bar make_bar(const std::vector<double>& values, double floor, const IsolateLimits& l, std::string floor_by = "") {
  Bar b;
  b.floor = floor;
  b.floor_by = std::move(floor_by);
  if (values.size() >= 3) {
    auto [m, d] = median_mad(values);
    b.fleet = true;
    b.median = m;
    b.mad = std::max(d, l.mad_floor * m);
    b.k = l.mad_k;
    b.min_drop = l.min_drop;
    b.threshold = m - std::max(l.mad_k * b.mad, l.min_drop * m);
  }
  return b;
}

// A re-measurement `t` passes the fleet rule: at least the bar's fraction of
// the median of the other tests of its round (the fleet's median when it
// had none), and not below the floor.
bool clears(const std::vector<NodeTest>& tests, const NodeTest& t, const Bar& bar, double NodeTest::*metric) {
  if (bar.floor > 0 && t.*metric < bar.floor) return false;
  if (!bar.fleet) return true;
  std::vector<double> others;
  for (const auto& o : tests) {
    if (&o != &t && o.pair() && o.round == t.round && o.error.empty()) others.push_back(o.*metric);
  }
  const double reference = others.empty() ? bar.median : median_mad(others).first;
  return t.*metric >= (bar.median > 0 ? bar.threshold / bar.median : 0) * reference;
}

// Why a node fails on one metric, or nothing: its best test below the
// floor, or the fleet rule. For the fleet rule its first pairings (`base`)
// must miss the fleet's bar, and so must every re-measurement, each against
// the median of the other tests of its own round (what the fabric gave at
// that moment; the fleet's median when the round had no other test) at the
// same fraction of the median as the bar.
std::optional<std::string> metric_failure(const std::vector<NodeTest>& tests, int node, const Bar& bar,
                                          double NodeTest::*metric, double best, std::optional<double> base,
                                          const char* what, const IsolateLimits& l) {
  if (bar.floor > 0 && best < bar.floor) return bar.why(what, best, l.mad_k);
  if (!bar.fleet || !base || *base >= bar.threshold) return std::nullopt;
  int retries = 0;
  for (const auto& t : tests) {
    if (!t.pair() || !t.retry || !t.error.empty() || std::count(t.nodes.begin(), t.nodes.end(), node) == 0) continue;
    if (clears(tests, t, bar, metric)) return std::nullopt;
    ++retries;
  }
  std::string why = bar.why(what, *base, l.mad_k);
  if (retries > 0) why += fmt::format("; re-measured {} time(s), best {:.3f} GB/s, below its round each time", retries, best);
  return why;
}

struct Judgement {
  std::vector<NodeVerdict> nodes;
  std::set<int> node_failed;                 // by the node's own numbers
  std::vector<std::pair<int, int>> links;    // pairs failing while both ends pass
  std::vector<std::vector<int>> bad_groups;  // bisection groups that failed
  Bar busbw, stream;
};

Judgement judge(const std::vector<NodeTest>& tests, const std::vector<std::string>& labels, const std::set<int>& dead,
                const IsolateLimits& l) {
  const size_t n = labels.size();
  Judgement j;
  j.nodes.resize(n);
  std::vector<std::vector<std::string>> errors(n);
  // The fleet's numbers come from the first pairings, where every node was
  // measured alike; re-measurements (retries, often alone on the fabric) may
  // clear a suspect but do not move the median.
  std::vector<std::optional<double>> base_b(n), base_s(n);
  for (const auto& t : tests) {
    if (!t.pair()) continue;
    for (int node : t.nodes) {
      auto& v = j.nodes[static_cast<size_t>(node)];
      ++v.tests;
      if (!t.error.empty()) {
        errors[static_cast<size_t>(node)].push_back(fmt::format("round {} with {}: {}", t.round,
                                                                labels[static_cast<size_t>(t.nodes[0] == node ? t.nodes[1] : t.nodes[0])], t.error));
        continue;
      }
      v.busbw_gbs = std::max(v.busbw_gbs.value_or(0), t.busbw_gbs);
      v.stream_gbs = std::max(v.stream_gbs.value_or(0), t.stream_gbs);
      if (!t.retry) {
        auto& bb = base_b[static_cast<size_t>(node)];
        auto& bs = base_s[static_cast<size_t>(node)];
        bb = std::max(bb.value_or(0), t.busbw_gbs);
        bs = std::max(bs.value_or(0), t.stream_gbs);
      }
    }
  }
  std::vector<double> b, s;
  for (size_t i = 0; i < n; ++i) {
    if (base_b[i]) b.push_back(*base_b[i]);
    if (base_s[i]) s.push_back(*base_s[i]);
  }
  j.busbw = make_bar(b, l.min_busbw_gbs, l, l.busbw_floor_by);
  j.stream = make_bar(s, l.min_stream_gbs, l);
  for (size_t i = 0; i < n; ++i) {
    auto& v = j.nodes[i];
    if (dead.count(static_cast<int>(i))) {
      v.reasons.push_back("a rank did not answer: " + (errors[i].empty() ? std::string("stopped or lost") : errors[i].back()));
      v.code = results::code::kIsolateUnreachable;
    } else if (v.tests > 0 && !v.busbw_gbs) {
      v.reasons.push_back("every pair test failed: " + errors[i].front() +
                          (errors[i].size() > 1 ? fmt::format(" (and {} more)", errors[i].size() - 1) : ""));
      v.code = results::code::kIsolateProbeFailed;
    } else if (v.busbw_gbs) {
      if (auto why = metric_failure(tests, static_cast<int>(i), j.busbw, &NodeTest::busbw_gbs, *v.busbw_gbs, base_b[i],
                                    "allreduce busbw", l)) {
        v.reasons.push_back(*why);
      }
      if (auto why = metric_failure(tests, static_cast<int>(i), j.stream, &NodeTest::stream_gbs, *v.stream_gbs, base_s[i],
                                    "bidirectional bandwidth", l)) {
        v.reasons.push_back(*why);
      }
    }
    if (!v.reasons.empty()) j.node_failed.insert(static_cast<int>(i));
    if (!v.reasons.empty() && v.code.empty()) v.code = results::code::kIsolateSlowNode;
  }
  // Links: every test of the pair failed, while both ends pass elsewhere. A
  // link is judged against the fleet of links, each by its best test (a
  // node's number, the best over several partners, runs higher).
  std::map<std::pair<int, int>, std::vector<const NodeTest*>> by_pair;
  for (const auto& t : tests) {
    if (t.pair()) by_pair[{std::min(t.nodes[0], t.nodes[1]), std::max(t.nodes[0], t.nodes[1])}].push_back(&t);
  }
  std::vector<double> pair_b, pair_s;
  for (const auto& [pair, list] : by_pair) {
    std::optional<double> b, s;
    for (const NodeTest* t : list) {
      if (!t->error.empty() || t->retry) continue;
      b = std::max(b.value_or(0), t->busbw_gbs);
      s = std::max(s.value_or(0), t->stream_gbs);
    }
    if (b) pair_b.push_back(*b);
    if (s) pair_s.push_back(*s);
  }
  const Bar link_busbw = make_bar(pair_b, l.min_busbw_gbs, l, l.busbw_floor_by), link_stream = make_bar(pair_s, l.min_stream_gbs, l);
  // A node whose partner was lost mid-test may still carry that test's
  // requests in flight (its progress engine polls them), so its later
  // numbers say nothing about a link: its links are not judged this run.
  std::set<int> partner_lost;
  for (const auto& t : tests) {
    if (!t.pair() || t.error.empty()) continue;
    for (int end : {0, 1}) {
      if (dead.count(t.nodes[static_cast<size_t>(end)])) partner_lost.insert(t.nodes[static_cast<size_t>(1 - end)]);
    }
  }
  for (const auto& [pair, list] : by_pair) {
    if (j.node_failed.count(pair.first) || j.node_failed.count(pair.second)) continue;
    if (partner_lost.count(pair.first) || partner_lost.count(pair.second)) continue;
    std::string why;
    for (const NodeTest* t : list) {
      if (!t->error.empty()) {
        why = t->error;
      } else if (t->retry ? !clears(tests, *t, link_busbw, &NodeTest::busbw_gbs) : link_busbw.low(t->busbw_gbs)) {
        why = link_busbw.why("allreduce busbw", t->busbw_gbs, l.mad_k);
      } else if (t->retry ? !clears(tests, *t, link_stream, &NodeTest::stream_gbs) : link_stream.low(t->stream_gbs)) {
        why = link_stream.why("bidirectional bandwidth", t->stream_gbs, l.mad_k);
      } else {
        why.clear();
        break;  // one good test clears the link
      }
    }
    if (why.empty()) continue;
    j.links.push_back(pair);  // a suspect: re-tested by the next retry round
    // Named once a second test failed too (or when there are no retries): a
    // pair first met in a retry round (a reference pair) needs its re-test.
    if (list.size() < 2 && l.retries > 0) continue;
    for (int end : {pair.first, pair.second}) {
      const int other = end == pair.first ? pair.second : pair.first;
      auto& v = j.nodes[static_cast<size_t>(end)];
      v.reasons.push_back(fmt::format("link to {} (both ends pass with other nodes): {}", labels[static_cast<size_t>(other)], why));
      if (v.code.empty()) v.code = results::code::kIsolateSlowLink;
    }
  }
  // Bisection: the latest test of each group; a failing group of two or three is named.
  for (const auto& t : tests) {
    if (t.pair()) continue;
    Bar bar = j.busbw;  // a model predicts each group size on its own
    if (l.group_busbw_floor) {
      if (auto f = l.group_busbw_floor(static_cast<int>(t.nodes.size()))) std::tie(bar.floor, bar.floor_by) = *f;
    }
    const bool bad = !t.error.empty() || bar.low(t.busbw_gbs);
    if (!bad) continue;
    j.bad_groups.push_back(t.nodes);
    if (t.nodes.size() > 3) continue;
    std::vector<std::string> names;
    for (int node : t.nodes) names.push_back(labels[static_cast<size_t>(node)]);
    std::string what = !t.error.empty() ? t.error : bar.why("allreduce busbw", t.busbw_gbs, l.mad_k);
    for (int node : t.nodes) {
      auto& v = j.nodes[static_cast<size_t>(node)];
      v.reasons.push_back(fmt::format("bisected allreduce group [{}] fails though its pairs pass: {}", fmt::join(names, ", "), what));
      if (v.code.empty()) v.code = results::code::kIsolateSlowGroup;
    }
  }
  for (auto& v : j.nodes) v.failed = !v.reasons.empty();
  return j;
}

}  // namespace

std::vector<NodeVerdict> Isolation::verdicts() const { return judge(history_, labels_, dead_, limits_).nodes; }

std::set<int> Isolation::suspects() const {
  std::set<int> out;
  for (int n : judge(history_, labels_, dead_, limits_).node_failed) {
    if (!dead_.count(n)) out.insert(n);
  }
  return out;
}

std::vector<NodeTest> Isolation::retry_round() {
  const Judgement j = judge(history_, labels_, dead_, limits_);
  std::set<int> used;
  std::vector<NodeTest> out;
  std::vector<int> good;
  for (int n : alive()) {
    if (!j.nodes[static_cast<size_t>(n)].failed) good.push_back(n);
  }
  auto paired_before = [&](int a, int b) {
    return std::any_of(history_.begin(), history_.end(), [&](const NodeTest& t) {
      return t.pair() && ((t.nodes[0] == a && t.nodes[1] == b) || (t.nodes[0] == b && t.nodes[1] == a));
    });
  };
  for (int s : j.node_failed) {
    if (dead_.count(s)) continue;
    // A node that passed and was not this suspect's partner yet, else any that passed.
    int pick = -1;
    for (int pass = 0; pass < 2 && pick < 0; ++pass) {
      for (int g : good) {
        if (used.count(g) || (pass == 0 && paired_before(s, g))) continue;
        pick = g;
        break;
      }
    }
    if (pick < 0) continue;
    used.insert(s);
    used.insert(pick);
    out.push_back(make_test({s, pick}));
  }
  for (const auto& [a, b] : j.links) {
    if (used.count(a) || used.count(b)) continue;
    used.insert(a);
    used.insert(b);
    out.push_back(make_test({a, b}));
  }
  // The good nodes left over test each other at the same time: the round's
  // own reference, under the same load as the suspects' re-measurements.
  std::vector<int> rest;
  for (int g : good) {
    if (!used.count(g)) rest.push_back(g);
  }
  if (!out.empty()) {
    for (size_t i = 0; i + 1 < rest.size(); i += 2) out.push_back(make_test({rest[i], rest[i + 1]}));
  }
  for (auto& t : out) t.retry = true;
  return out;
}

std::vector<NodeTest> Isolation::next_round() {
  std::vector<NodeTest> out;
  const std::vector<int> live = alive();
  while (out.empty() && phase_ != Phase::Done) {
    switch (phase_) {
      case Phase::Pairs:
        for (size_t i = 0; i + 1 < live.size(); i += 2) out.push_back(make_test({live[i], live[i + 1]}));
        phase_ = Phase::Shifted;
        break;
      case Phase::Shifted:
        // A second, different matching, so one bad node cannot condemn a good
        // one: 1-2, 3-4, ..., last-0 for an even count; for an odd one the
        // node left out of the first round meets the first node (last-0,
        // 1-2, ..., and one node sits out). Three nodes need all three pairs.
        if (live.size() == 2) {
          out.push_back(make_test({live[0], live[1]}));
        } else if (live.size() > 2) {
          const size_t n = live.size();
          if (n % 2) out.push_back(make_test({live[n - 1], live[0]}));
          for (size_t a = 1; a + 1 < n - (n % 2); a += 2) out.push_back(make_test({live[a], live[a + 1]}));
          if (n % 2 == 0) out.push_back(make_test({live[n - 1], live[0]}));
        }
        phase_ = live.size() == 3 ? Phase::Third : Phase::Retry;
        break;
      case Phase::Third:
        out.push_back(make_test({live[1], live[2]}));
        phase_ = Phase::Retry;
        break;
      case Phase::Retry:
        if (retries_done_ < limits_.retries && !(suspects().empty() && judge(history_, labels_, dead_, limits_).links.empty())) {
          out = retry_round();
          ++retries_done_;
          if (out.empty()) retries_done_ = limits_.retries;
        } else {
          phase_ = Phase::Bisect;
        }
        break;
      case Phase::Bisect: {
        if (!bisect_started_) {
          bisect_started_ = true;
          std::vector<int> group;
          const Judgement j = judge(history_, labels_, dead_, limits_);
          for (int n : live) {
            if (!j.nodes[static_cast<size_t>(n)].failed) group.push_back(n);
          }
          if (static_cast<int>(group.size()) >= std::max(limits_.bisect_min_nodes, 4)) bisect_groups_.push_back(group);
        }
        for (auto& g : bisect_groups_) out.push_back(make_test(g));
        bisect_groups_.clear();
        if (out.empty()) phase_ = Phase::Done;
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
  const Judgement j = judge(history_, labels_, dead_, limits_);
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
