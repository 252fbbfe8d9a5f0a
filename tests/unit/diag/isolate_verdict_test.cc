// The isolate schedule and verdicts on simulated clusters: a pair runs at the
// speed of its slower node, or of its link when that is slower still.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>

#include "isolate/verdict.h"
#include "smddp/results/failure_codes.h"

namespace smddp::diag {
namespace {

struct Sim {
  std::vector<double> speed;                 // per node, GB/s
  std::map<std::pair<int, int>, double> link;  // slow links
  std::set<int> dead;                        // never answer
  std::map<int, int> corrupt;                // node -> how many of its tests return wrong results (-1: all)
};

// Runs the isolation to the end; returns the verdicts.
std::vector<NodeVerdict> simulate(Sim& s, Isolation& iso) {
  for (;;) {
    auto tests = iso.next_round();
    if (tests.empty()) break;
    std::set<int> dead_now;
    std::set<int> seen;
    for (auto& t : tests) {
      for (int n : t.nodes) {
        EXPECT_TRUE(seen.insert(n).second) << "node " << n << " twice in round " << t.round;
      }
      double v = 1e9;
      for (int n : t.nodes) v = std::min(v, s.speed[static_cast<size_t>(n)]);
      if (t.pair()) {
        auto it = s.link.find({std::min(t.nodes[0], t.nodes[1]), std::max(t.nodes[0], t.nodes[1])});
        if (it != s.link.end()) v = std::min(v, it->second);
      }
      bool silent = false;
      for (int n : t.nodes) {
        if (s.dead.count(n)) {
          silent = true;
          dead_now.insert(n);
        }
      }
      for (int n : t.nodes) {
        auto it = s.corrupt.find(n);
        if (it == s.corrupt.end() || it->second == 0 || !t.corruption.empty()) continue;
        t.corruption = "rank " + std::to_string(n) + ": wrong results";
        if (it->second > 0) --it->second;
      }
      if (silent) {
        t.error = "rank sent no result";
      } else {
        t.busbw_gbs = v;
        t.stream_gbs = 2 * v;
      }
    }
    iso.record(tests, dead_now);
  }
  return iso.verdicts();
}

std::vector<std::string> labels(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("h" + std::to_string(i));
  return out;
}

std::set<int> failed(const std::vector<NodeVerdict>& v) {
  std::set<int> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i].failed) out.insert(static_cast<int>(i));
  }
  return out;
}

TEST(IsolateVerdict, MedianMad) {
  auto [m, d] = median_mad({1, 2, 3, 4, 100});
  EXPECT_DOUBLE_EQ(m, 3);
  EXPECT_DOUBLE_EQ(d, 1);
  EXPECT_EQ(median_mad({}).first, 0);
}

TEST(IsolateVerdict, RoundBudget) {
  EXPECT_EQ(round_budget(2), 6);
  EXPECT_EQ(round_budget(16), 12);
  EXPECT_EQ(round_budget(17), 14);
  EXPECT_EQ(round_budget(1024), 24);
}

TEST(IsolateVerdict, HealthyClusterNamesNobodyInTwoRounds) {
  for (int n : {2, 3, 4, 5, 8}) {
    Sim s;
    s.speed = std::vector<double>(static_cast<size_t>(n), 10.0);
    Isolation iso(labels(n), {});
    EXPECT_TRUE(failed(simulate(s, iso)).empty()) << n << " nodes";
    EXPECT_EQ(iso.rounds(), n == 3 ? 3 : 2) << n << " nodes";
  }
}

TEST(IsolateVerdict, SlowNodeIsNamedAlone) {
  for (int n : {3, 4, 5, 8, 9}) {
    for (int bad = 0; bad < n; ++bad) {
      Sim s;
      s.speed = std::vector<double>(static_cast<size_t>(n), 10.0);
      s.speed[static_cast<size_t>(bad)] = 0.5;
      Isolation iso(labels(n), {});
      auto v = simulate(s, iso);
      EXPECT_EQ(failed(v), std::set<int>{bad}) << n << " nodes, bad " << bad;
      EXPECT_NE(v[static_cast<size_t>(bad)].reasons.at(0).find("MADs below the fleet median"), std::string::npos);
      // Named once a majority of its re-measurements failed (4 of 6); three
      // nodes are all suspects, with no partner that passed: named at the
      // end, every test of the bad node having failed.
      if (n > 3) {
        EXPECT_NE(v[static_cast<size_t>(bad)].reasons.at(0).find("re-measured 4 time(s), 4 below its round"), std::string::npos)
            << v[static_cast<size_t>(bad)].reasons.at(0);
      }
      EXPECT_LE(iso.rounds(), round_budget(n));
    }
  }
}

TEST(IsolateVerdict, SlowLinkIsPinnedToTheLink) {
  for (int n : {4, 8}) {
    // The link of a first-round pair: both ends pass with others.
    Isolation probe(labels(n), {});
    const auto first = probe.next_round();
    ASSERT_FALSE(first.empty());
    const int a = std::min(first[0].nodes[0], first[0].nodes[1]), b = std::max(first[0].nodes[0], first[0].nodes[1]);
    Sim s;
    s.speed = std::vector<double>(static_cast<size_t>(n), 10.0);
    s.link[{a, b}] = 0.5;
    Isolation iso(labels(n), {});
    auto v = simulate(s, iso);
    EXPECT_EQ(failed(v), (std::set<int>{a, b})) << n << " nodes";
    EXPECT_NE(v[static_cast<size_t>(a)].reasons.at(0).find("link to h" + std::to_string(b)), std::string::npos)
        << v[static_cast<size_t>(a)].reasons.at(0);
    // Re-tested as a pair, not named on its first test.
    int retests = 0;
    for (const auto& t : iso.tests()) retests += t.subject == NodeTest::Subject::Link && t.retry;
    EXPECT_GE(retests, 2) << n << " nodes";
    EXPECT_LE(iso.rounds(), round_budget(n));
  }
}

TEST(IsolateVerdict, SilentNodeIsNamedAndDropped) {
  Sim s;
  s.speed = std::vector<double>(4, 10.0);
  s.dead = {2};
  Isolation iso(labels(4), {});
  auto v = simulate(s, iso);
  EXPECT_EQ(failed(v), std::set<int>{2});
  EXPECT_NE(v[2].reasons.at(0).find("did not answer"), std::string::npos);
  for (const auto& t : iso.tests()) {
    if (t.round > 1) {
      EXPECT_EQ(std::count(t.nodes.begin(), t.nodes.end(), 2), 0) << "round " << t.round;
    }
  }
}

TEST(IsolateVerdict, ASurvivorOfALostPartnerHasNoLinkNamed) {
  // Node 3 never answers; its first-round partner then runs slow with one
  // other node (its progress engine still polls the lost test's requests):
  // only node 3 is named, no link.
  Sim first;
  first.speed = std::vector<double>(4, 10.0);
  first.dead = {3};
  Isolation probe(labels(4), {});
  simulate(first, probe);
  int survivor = -1;
  for (const auto& t : probe.tests()) {
    if (t.round == 1 && t.pair() && (t.nodes[0] == 3 || t.nodes[1] == 3)) survivor = t.nodes[0] == 3 ? t.nodes[1] : t.nodes[0];
  }
  ASSERT_GE(survivor, 0);
  for (int other = 0; other < 3; ++other) {
    if (other == survivor) continue;
    Sim s = first;
    s.link[{std::min(survivor, other), std::max(survivor, other)}] = 0.5;
    Isolation iso(labels(4), {});
    auto v = simulate(s, iso);
    EXPECT_EQ(failed(v), std::set<int>{3}) << "slow link " << survivor << "-" << other;
    // It passes, and its verdict says it was not judged after the loss.
    EXPECT_NE(v[static_cast<size_t>(survivor)].note.find("not judged after round 1: its partner stopped answering"), std::string::npos)
        << v[static_cast<size_t>(survivor)].note;
    EXPECT_TRUE(v[static_cast<size_t>(other)].note.empty()) << v[static_cast<size_t>(other)].note;
  }
}

TEST(IsolateVerdict, ASurvivorOfALostPartnerIsNeitherBlamedNorBlamesAnother) {
  // Node 3 never answers; its first-round partner then measures half speed
  // with whoever it meets (the lost test's requests still in flight): only
  // node 3 is named, the survivor meets nobody after that round and no
  // healthy node is named for having met it.
  for (int n : {4, 5, 8}) {
    Sim first;
    first.speed = std::vector<double>(static_cast<size_t>(n), 10.0);
    first.dead = {3};
    Isolation probe(labels(n), {});
    simulate(first, probe);
    int survivor = -1, lost_round = 0;
    for (const auto& t : probe.tests()) {
      if (t.pair() && !t.error.empty() && (t.nodes[0] == 3 || t.nodes[1] == 3)) {
        survivor = t.nodes[0] == 3 ? t.nodes[1] : t.nodes[0];
        lost_round = t.round;
        break;
      }
    }
    ASSERT_GE(survivor, 0) << n << " nodes";
    Sim s = first;
    Isolation iso(labels(n), {});
    // The survivor is slow from the round after the loss on.
    for (;;) {
      auto tests = iso.next_round();
      if (tests.empty()) break;
      std::set<int> dead_now;
      for (auto& t : tests) {
        if (std::count(t.nodes.begin(), t.nodes.end(), 3)) {
          t.error = "rank sent no result";
          dead_now.insert(3);
          continue;
        }
        const bool slow = t.round > lost_round && std::count(t.nodes.begin(), t.nodes.end(), survivor);
        EXPECT_FALSE(slow) << "round " << t.round << " tests the survivor " << survivor << " (" << n << " nodes)";
        t.busbw_gbs = slow ? 5.0 : 10.0;
        t.stream_gbs = 2 * t.busbw_gbs;
      }
      iso.record(tests, dead_now);
    }
    EXPECT_EQ(failed(iso.verdicts()), std::set<int>{3}) << n << " nodes, survivor " << survivor;
  }
}

TEST(IsolateVerdict, AJudgedTestAfterAPartnerWasLostCountsForNeitherEnd) {
  // A schedule that keeps testing the survivor (as another tool's might):
  // those tests judge neither it nor its partners.
  Isolation iso(labels(8), {});
  auto r1 = iso.next_round();
  ASSERT_EQ(r1.size(), 4u);
  int survivor = -1;
  for (auto& t : r1) {
    if (std::count(t.nodes.begin(), t.nodes.end(), 3)) {
      t.error = "rank sent no result";
      survivor = t.nodes[0] == 3 ? t.nodes[1] : t.nodes[0];
    } else {
      t.busbw_gbs = 10;
      t.stream_gbs = 20;
    }
  }
  iso.record(r1, {3});
  std::vector<NodeTest> later;
  std::vector<int> others;
  for (int node = 0; node < 8; ++node) {
    if (node != survivor && node != 3) others.push_back(node);
  }
  for (int round = 2; round <= 4; ++round) {  // one slow test a round, each with another node
    NodeTest t;
    t.nodes = {survivor, others[static_cast<size_t>(round - 2)]};
    t.round = round;
    t.busbw_gbs = 1;
    t.stream_gbs = 2;
    later.push_back(t);
  }
  iso.record(later, {});
  EXPECT_EQ(failed(iso.verdicts()), std::set<int>{3});
}

TEST(IsolateVerdict, ASuspectWhosePartnerGoesSilentIsNotNamedOnItsFirstTest) {
  // A pair measures slow in round 1 (noise); in round 2 one of its nodes
  // meets a node that stops answering, so it can never be re-measured: only
  // the silent node is named, not the suspect on its one slow test.
  Isolation iso(labels(8), {});
  auto r1 = iso.next_round();
  ASSERT_EQ(r1.size(), 4u);
  const int a = r1[0].nodes[0], b = r1[0].nodes[1];
  for (auto& t : r1) {
    t.busbw_gbs = &t == &r1[0] ? 4.0 : 10.0;
    t.stream_gbs = 2 * t.busbw_gbs;
  }
  iso.record(r1, {});
  int silent = -1;
  for (;;) {
    auto tests = iso.next_round();
    if (tests.empty()) break;
    std::set<int> dead_now;
    for (auto& t : tests) {
      if (silent < 0 && std::count(t.nodes.begin(), t.nodes.end(), a)) silent = t.nodes[0] == a ? t.nodes[1] : t.nodes[0];
      if (std::count(t.nodes.begin(), t.nodes.end(), silent)) {
        t.error = "rank sent no result";
        dead_now.insert(silent);
        continue;
      }
      t.busbw_gbs = 10;
      t.stream_gbs = 20;
    }
    iso.record(tests, dead_now);
  }
  ASSERT_GE(silent, 0);
  ASSERT_NE(silent, b);
  EXPECT_EQ(failed(iso.verdicts()), std::set<int>{silent}) << "suspects " << a << " and " << b;
}

TEST(IsolateVerdict, TwoSurvivorsMeetSoALaterStallOfTheirsIsSeen) {
  // Two round-1 tests each lose a node; the survivors meet in round 2 (a
  // test judged for neither), where one of them stops answering too.
  Isolation iso(labels(8), {});
  auto r1 = iso.next_round();
  ASSERT_EQ(r1.size(), 4u);
  const int d0 = r1[0].nodes[0], s0 = r1[0].nodes[1], d1 = r1[1].nodes[0], s1 = r1[1].nodes[1];
  for (size_t i = 0; i < r1.size(); ++i) {
    if (i < 2) {
      r1[i].error = "rank sent no result";
    } else {
      r1[i].busbw_gbs = 10;
      r1[i].stream_gbs = 20;
    }
  }
  iso.record(r1, {d0, d1});
  bool met = false;
  for (;;) {
    auto tests = iso.next_round();
    if (tests.empty()) break;
    std::set<int> dead_now;
    for (auto& t : tests) {
      const bool has_s0 = std::count(t.nodes.begin(), t.nodes.end(), s0) > 0;
      met = met || (has_s0 && std::count(t.nodes.begin(), t.nodes.end(), s1) > 0);
      if (has_s0) {
        t.error = "rank sent no result";
        dead_now.insert(s0);
        continue;
      }
      t.busbw_gbs = 10;
      t.stream_gbs = 20;
    }
    iso.record(tests, dead_now);
  }
  EXPECT_TRUE(met);
  EXPECT_EQ(failed(iso.verdicts()), (std::set<int>{d0, d1, s0}));
}

TEST(IsolateVerdict, FloorFailsEveryNodeBelowIt) {
  Sim s;
  s.speed = std::vector<double>(4, 10.0);
  IsolateLimits l;
  l.min_busbw_gbs = 20;
  Isolation iso(labels(4), l);
  auto v = simulate(s, iso);
  EXPECT_EQ(failed(v).size(), 4u);
  EXPECT_NE(v[0].reasons.at(0).find("below the floor 20.000 GB/s"), std::string::npos) << v[0].reasons.at(0);
}

// Runs the isolation with `value(test)` as each test's allreduce busbw.
std::vector<NodeVerdict> measure(Isolation& iso, const std::function<double(const NodeTest&)>& value) {
  for (;;) {
    auto tests = iso.next_round();
    if (tests.empty()) break;
    for (auto& t : tests) {
      t.busbw_gbs = value(t);
      t.stream_gbs = 2 * t.busbw_gbs;
    }
    iso.record(tests, {});
  }
  return iso.verdicts();
}

TEST(IsolateVerdict, MinDropSparesSmallDipsOfAQuietFleet) {
  // An otherwise identical fleet: the MAD is 0 and, without its floor, any
  // dip would be "infinitely many MADs" below; min_drop (25 %) decides.
  for (double slow : {8.0, 7.0}) {
    IsolateLimits l;
    l.mad_floor = 0;
    l.mad_k = 3;
    l.min_drop = 0.25;
    Isolation iso(labels(4), l);
    auto v = measure(iso, [&](const NodeTest& t) {
      return std::count(t.nodes.begin(), t.nodes.end(), 0) ? slow : 10.0;
    });
    if (slow == 8.0) {
      EXPECT_TRUE(failed(v).empty()) << "20 % below the median";
    } else {
      EXPECT_EQ(failed(v), std::set<int>{0}) << "30 % below the median";
      EXPECT_NE(v[0].reasons.at(0).find("(30 % below; MAD 0.000, limits 3 MADs and 25 %)"), std::string::npos)
          << v[0].reasons.at(0);
    }
  }
}

TEST(IsolateVerdict, RetriesReMeasureWithoutMovingTheFleetMedian) {
  // Node 0 measures slow in both first pairings (noise: a busy neighbour),
  // fast when re-measured: it passes. Re-measurements run 5x faster (fewer
  // tests at once), which must not raise the bar for the nodes never retried.
  Isolation iso(labels(8), {});
  auto v = measure(iso, [](const NodeTest& t) {
    if (t.retry) return 50.0;
    return std::count(t.nodes.begin(), t.nodes.end(), 0) ? 5.0 : 10.0;
  });
  EXPECT_TRUE(failed(v).empty());
  int retries = 0;
  for (const auto& t : iso.tests()) retries += t.retry;
  EXPECT_GE(retries, 1);
  EXPECT_DOUBLE_EQ(v[0].busbw_gbs.value_or(0), 50.0);
}

TEST(IsolateVerdict, AReMeasurementIsJudgedAgainstItsOwnRound) {
  // Node 0 is slow in the first pairings; by the retry the whole fabric is
  // slower (another job): its re-measurement matches the round's reference
  // pair, so it is cleared, not condemned by the earlier, faster median.
  Isolation iso(labels(4), {});
  auto v = measure(iso, [](const NodeTest& t) {
    if (t.retry) return 3.0;
    return std::count(t.nodes.begin(), t.nodes.end(), 0) ? 5.0 : 10.0;
  });
  EXPECT_TRUE(failed(v).empty()) << (failed(v).empty() ? "" : v[static_cast<size_t>(*failed(v).begin())].reasons.at(0));
  bool reference = false;  // the retry round ran a pair of good nodes beside the suspect's
  for (const auto& t : iso.tests()) reference |= t.retry && std::count(t.nodes.begin(), t.nodes.end(), 0) == 0;
  EXPECT_TRUE(reference);
}

TEST(IsolateVerdict, AReferencePairSlowOnceIsNotNamed) {
  // The retry round's reference pair (h1-h3, never paired before) measures
  // slow once, by noise: a link is named only when a second test fails too.
  Isolation iso(labels(4), {});
  int reference_runs = 0;
  auto v = measure(iso, [&](const NodeTest& t) {
    if (t.nodes == std::vector<int>{1, 3}) return ++reference_runs == 1 ? 3.0 : 10.0;
    return t.retry || std::count(t.nodes.begin(), t.nodes.end(), 0) == 0 ? 10.0 : 5.0;
  });
  EXPECT_GE(reference_runs, 1);
  EXPECT_TRUE(failed(v).empty()) << (failed(v).empty() ? "" : v[1].reasons.at(0));
}

TEST(IsolateVerdict, ASlowNodeStaysSlowWhenReMeasured) {
  // The same, but node 0 is slow in every test: retried, and still named.
  Isolation iso(labels(8), {});
  auto v = measure(iso, [](const NodeTest& t) {
    if (std::count(t.nodes.begin(), t.nodes.end(), 0)) return 2.0;
    return t.retry ? 50.0 : 10.0;
  });
  EXPECT_EQ(failed(v), std::set<int>{0});
  EXPECT_NE(v[0].reasons.at(0).find("below the fleet median 10.000 GB/s"), std::string::npos) << v[0].reasons.at(0);
}

TEST(IsolateVerdict, LargeJobsBisectInLogRounds) {
  const int n = 64;
  Sim s;
  s.speed = std::vector<double>(n, 10.0);
  Isolation iso(labels(n), {});
  EXPECT_TRUE(failed(simulate(s, iso)).empty());
  EXPECT_EQ(iso.rounds(), 3);  // two pairings, one group of all 64 that passes
  int groups = 0;
  for (const auto& t : iso.tests()) groups += !t.pair();
  EXPECT_EQ(groups, 1);
}

}  // namespace
}  // namespace smddp::diag

namespace smddp::diag {
namespace {

std::set<int> with_code(const std::vector<NodeVerdict>& v, std::string_view code) {
  std::set<int> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i].code == code) out.insert(static_cast<int>(i));
  }
  return out;
}

TEST(IsolateCorruption, EveryPairOfCorruptersIsNamedAndNobodyElse) {
  // Among 8 nodes, a healthy node often meets both bad ones: its two wrong
  // partners are implicated by their other partners, not by it.
  for (int a = 0; a < 8; ++a) {
    for (int b = a + 1; b < 8; ++b) {
      for (uint64_t seed = 1; seed <= 3; ++seed) {
        Sim s;
        s.speed.assign(8, 10.0);
        s.corrupt = {{a, -1}, {b, -1}};
        Isolation iso(labels(8), {}, {}, seed);
        const auto v = simulate(s, iso);
        std::string tests;
        for (const auto& t : iso.tests()) {
          tests += "\n  round " + std::to_string(t.round) + ":";
          for (int m : t.nodes) tests += " " + std::to_string(m);
          if (!t.corruption.empty()) tests += " wrong";
        }
        EXPECT_EQ(failed(v), (std::set<int>{a, b})) << a << "," << b << " seed " << seed << tests;
        EXPECT_EQ(with_code(v, results::code::kIsolateCorruption), (std::set<int>{a, b})) << a << "," << b << " seed " << seed;
      }
    }
  }
}

TEST(IsolateCorruption, AWrongResultNobodyReproducesNamesThePairAfterReTests) {
  for (int retries : {0, 6}) {
    Sim s;
    s.speed.assign(8, 10.0);
    s.corrupt = {{3, 1}};  // node 3's first test only
    IsolateLimits l;
    l.retries = retries;
    Isolation iso(labels(8), l);
    const auto v = simulate(s, iso);
    const auto named = failed(v);
    ASSERT_EQ(named.size(), 2u) << "retries " << retries;
    EXPECT_TRUE(named.count(3));
    EXPECT_EQ(with_code(v, results::code::kIsolateCorruptionUnplaced), named);
    for (int node : named) {
      const std::string& why = v[static_cast<size_t>(node)].reasons.at(0);
      EXPECT_NE(why.find("not reproduced with other partners"), std::string::npos) << why;
      // Each end met other partners that many times before the pair was named.
      if (retries > 0) {
        EXPECT_NE(why.find("(6 clean test(s) since)"), std::string::npos) << why;
      }
    }
  }
}

TEST(IsolateCorruption, TwoNodesAreNamedTogether) {
  Sim s;
  s.speed.assign(2, 10.0);
  s.corrupt = {{1, -1}};
  Isolation iso(labels(2), {});
  const auto v = simulate(s, iso);
  EXPECT_EQ(with_code(v, results::code::kIsolateCorruptionUnplaced), (std::set<int>{0, 1}));
}

TEST(IsolateCorruption, OutranksSlownessAndKeepsBothReasons) {
  Sim s;
  s.speed.assign(8, 10.0);
  s.speed[5] = 4.0;
  s.corrupt = {{5, -1}};
  Isolation iso(labels(8), {});
  const auto v = simulate(s, iso);
  EXPECT_EQ(failed(v), std::set<int>{5});
  EXPECT_EQ(v[5].code, results::code::kIsolateCorruption);
  EXPECT_NE(v[5].reasons.at(0).find("silent data corruption: wrong results with"), std::string::npos) << v[5].reasons.at(0);
}

}  // namespace
}  // namespace smddp::diag
