// Rack-aware pairing, the --faults SPEC, the --topology file and the
// simulator of smddp-diag isolate (docs/diag.md, "Simulation"): pure
// functions, checked without MPI. The simulations are small (16-64 nodes).
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "isolate/fault_spec.h"
#include "isolate/noise.h"
#include "isolate/pairing.h"
#include "isolate/simulator.h"
#include "isolate/topology.h"
#include "smddp/error.h"
#include "smddp/results/failure_codes.h"

namespace smddp::diag {
namespace {

std::vector<int> nodes(int n) {
  std::vector<int> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out[static_cast<size_t>(i)] = i;
  return out;
}

// Racks of the given sizes, consecutive.
std::vector<int> racks(const std::vector<int>& sizes) {
  std::vector<int> out;
  for (size_t r = 0; r < sizes.size(); ++r) out.insert(out.end(), static_cast<size_t>(sizes[r]), static_cast<int>(r));
  return out;
}

// Every node in at most one pair; returns the nodes paired.
std::set<int> matching(const std::vector<NodePair>& pairs) {
  std::set<int> seen;
  for (const auto& [a, b] : pairs) {
    EXPECT_LT(a, b);
    EXPECT_TRUE(seen.insert(a).second) << a << " twice";
    EXPECT_TRUE(seen.insert(b).second) << b << " twice";
  }
  return seen;
}

TEST(IsolatePairing, InsideRacksThenAcross) {
  const auto rack = racks({8, 8, 8, 8});
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const auto r0 = pairing_round(0, nodes(32), rack, seed, {}, {});
    EXPECT_EQ(matching(r0).size(), 32u);
    for (const auto& [a, b] : r0) EXPECT_EQ(rack[static_cast<size_t>(a)], rack[static_cast<size_t>(b)]) << a << "-" << b;
    const std::set<NodePair> earlier(r0.begin(), r0.end());
    const auto r1 = pairing_round(1, nodes(32), rack, seed, earlier, {});
    EXPECT_EQ(matching(r1).size(), 32u);
    for (const auto& p : r1) {
      EXPECT_NE(rack[static_cast<size_t>(p.first)], rack[static_cast<size_t>(p.second)]) << p.first << "-" << p.second;
      EXPECT_FALSE(earlier.count(p)) << "repeated " << p.first << "-" << p.second;
    }
  }
}

TEST(IsolatePairing, OddRacksPairTheirLeftoversAcrossAndTakeTurnsSittingOut) {
  const auto rack = racks({3, 3, 3});
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const auto r0 = pairing_round(0, nodes(9), rack, seed, {}, {});
    const auto in0 = matching(r0);
    ASSERT_EQ(in0.size(), 8u);
    int across = 0;
    for (const auto& [a, b] : r0) across += rack[static_cast<size_t>(a)] != rack[static_cast<size_t>(b)];
    EXPECT_EQ(across, 1) << "one pair of leftovers";
    std::set<int> out0;
    for (int v : nodes(9)) {
      if (!in0.count(v)) out0.insert(v);
    }
    const auto r1 = pairing_round(1, nodes(9), rack, seed, std::set<NodePair>(r0.begin(), r0.end()), out0);
    const auto in1 = matching(r1);
    EXPECT_EQ(in1.size(), 8u);
    EXPECT_TRUE(in1.count(*out0.begin())) << "the node that sat out sits out again";
    for (const auto& [a, b] : r1) EXPECT_NE(rack[static_cast<size_t>(a)], rack[static_cast<size_t>(b)]);
  }
}

TEST(IsolatePairing, FlatRoundsAreDisjointAndTheSeedDecides) {
  for (int n : {4, 6, 8, 16, 33}) {
    const std::vector<int> flat(static_cast<size_t>(n), 0);
    std::set<std::vector<NodePair>> draws;
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      const auto r0 = pairing_round(0, nodes(n), flat, seed, {}, {});
      EXPECT_EQ(r0, pairing_round(0, nodes(n), flat, seed, {}, {})) << "same seed, same pairs";
      draws.insert(r0);
      const std::set<NodePair> earlier(r0.begin(), r0.end());
      for (const auto& p : pairing_round(1, nodes(n), flat, seed, earlier, {})) EXPECT_FALSE(earlier.count(p)) << n << " nodes";
    }
    EXPECT_GT(draws.size(), 5u) << n << " nodes: the seed draws the pairs";
  }
  // Two nodes have one pair to test, in every round.
  EXPECT_EQ(pairing_round(1, nodes(2), {0, 0}, 1, {{0, 1}}, {}), (std::vector<NodePair>{{0, 1}}));
}

TEST(IsolateFaultSpec, ReadsEachKind) {
  const auto f = parse_fault_spec("slow-node=3@2.0, slow-link=1@4.5,stall=1,flap=2");
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].kind, FaultKind::SlowNode);
  EXPECT_EQ(f[0].count, 3);
  EXPECT_DOUBLE_EQ(f[0].factor, 2.0);
  EXPECT_DOUBLE_EQ(f[1].factor, 4.5);
  EXPECT_EQ(f[2].kind, FaultKind::Stall);
  EXPECT_EQ(f[3].count, 2);
  EXPECT_DOUBLE_EQ(f[3].factor, 2.0);  // the default
  EXPECT_TRUE(parse_fault_spec("").empty());
  EXPECT_TRUE(parse_fault_spec("none").empty());
  EXPECT_EQ(parse_fault_spec("slow-node=0").at(0).count, 0);
  // corrupt's @ is a rate of wrong results, 1 by default.
  const auto c = parse_fault_spec("corrupt=2@0.25,slow-node=1");
  EXPECT_EQ(c.at(0).kind, FaultKind::Corrupt);
  EXPECT_DOUBLE_EQ(c.at(0).factor, 0.25);
  EXPECT_DOUBLE_EQ(parse_fault_spec("corrupt=1").at(0).factor, 1.0);
  EXPECT_DOUBLE_EQ(parse_fault_spec("corrupt=1@1").at(0).factor, 1.0);
}

TEST(IsolateFaultSpec, RefusesHostileValuesInOneLine) {
  const std::vector<std::string> bad = {
      "slow-node", "slow-node=", "slow-node=-1", "slow-node=1.5", "slow-node=0x10", "slow-node=1e3",
      "slow-node=99999999999999999999", "slow-node=100001", "slow-node=1@1", "slow-node=1@0.5", "slow-node=1@-2",
      "slow-node=1@inf", "slow-node=1@nan", "slow-node=1@1e999", "slow-node=1@2@3", "slow-node=1@", "slow-node=1@1001",
      "stall=1@2", "corrupt=1@0", "corrupt=1@1.5", "corrupt=1@-0.1", "corrupt=1@nan", "fast-node=1", "=1", "slow-node=1,slow-node=2", ",slow-node=1", "slow-node=1,,stall=1", "slow-node=1,",
      std::string(2000, 'a'), "slow-node=1\nstall=1", std::string("slow-node=1\0", 12)};
  for (const auto& spec : bad) {
    try {
      parse_fault_spec(spec);
      ADD_FAILURE() << "accepted '" << spec << "'";
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find("--faults"), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << "one line: " << what;
      EXPECT_LT(what.size(), 1200u) << "bounded";
    }
  }
}

TEST(IsolateTopology, ReadsTablesAndEc2Json) {
  const auto t = parse_topology("# host layer1 layer2 layer3\nh1 nn-a nn-b nn-c\nh2\tnn-a nn-b nn-d  # comment\n\n", "t");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.at("h2"), (std::vector<std::string>{"nn-a", "nn-b", "nn-d"}));
  const auto ec2 = parse_topology(R"({"Instances": [
      {"InstanceId": "i-1", "InstanceType": "p5.48xlarge", "NetworkNodes": ["nn-1", "nn-2", "nn-3"], "ZoneId": "use1-az2"},
      {"InstanceId": "i-2", "NetworkNodes": ["nn-1", "nn-2", "nn-4"]}]})",
                                  "t");
  EXPECT_EQ(ec2.at("i-2").back(), "nn-4");
  EXPECT_EQ(placement_of(ec2, "ip-10-0-0-1", "i-1")->back(), "nn-3");
  EXPECT_FALSE(placement_of(ec2, "ip-10-0-0-1", "").has_value());
  EXPECT_EQ(rack_ids({{"a", "r1"}, {"a", "r2"}, {"a", "r1"}, {}}), (std::vector<int>{0, 1, 0, 2}));
  // A rack column is a one-layer table.
  EXPECT_EQ(parse_topology("h1 rack7\nh2 rack7\n", "t").at("h1"), std::vector<std::string>{"rack7"});
}

TEST(IsolateTopology, RefusesBadFilesInOneLine) {
  const std::vector<std::string> bad = {
      "", "# nothing\n", "h1\n", "h1 a b\nh2 a\n", "h1 a\nh1 b\n", "h1 a b c d e\n", "h1 a\x01 b\n", "{", "{}",
      R"({"Instances": {}})", R"({"Instances": [{"InstanceId": "i-1"}]})", R"({"Instances": [{"InstanceId": "i-1", "NetworkNodes": [1]}]})",
      R"({"Instances": [{"InstanceId": "i-1", "NetworkNodes": []}]})", R"({"Instances": []})",
      R"({"Instances": [{"InstanceId": "i-\n1", "NetworkNodes": ["a"]}]})", R"({"Instances": [{"InstanceId": "i-1", "NetworkNodes": ["a\nb"]}]})"};
  for (const auto& text : bad) {
    try {
      parse_topology(text, "--topology t");
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find("--topology t"), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

// Noise that is no noise: every test at its nominal rate.
NoiseModel quiet() {
  NoiseModel m;
  m.samples.assign(kMinNoiseSamples, NoiseSample{1.0, 1.0});
  m.source = "quiet";
  return m;
}

SimSettings settings(int n, const std::string& faults, uint64_t seed, NoiseModel noise = builtin_noise()) {
  SimSettings s;
  s.nodes = n;
  s.seed = seed;
  s.faults = parse_fault_spec(faults);
  s.noise = std::move(noise);
  s.allreduce_seconds = s.stream_seconds = 1e-3;
  return s;
}

std::set<std::string> named(const SimRun& run) {
  std::set<std::string> out;
  const auto v = run.schedule->verdicts();
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i].failed) out.insert(run.labels[i]);
  }
  return out;
}

std::string trace(const SimRun& run) {
  std::string out;
  for (const auto& t : run.schedule->tests()) {
    out += std::to_string(t.round);
    for (int n : t.nodes) out += " " + std::to_string(n);
    out += " " + std::to_string(t.busbw_gbs) + " " + std::to_string(t.stream_gbs) + t.error + "\n";
  }
  return out + std::to_string(run.seconds);
}

TEST(IsolateSimulator, TheSeedDecidesEverything) {
  for (const char* faults : {"none", "slow-node=2@2.0,stall=1,flap=1"}) {
    const SimRun a = simulate(settings(64, faults, 7)), b = simulate(settings(64, faults, 7)), c = simulate(settings(64, faults, 8));
    EXPECT_EQ(trace(a), trace(b)) << faults;
    EXPECT_NE(trace(a), trace(c)) << faults;
    EXPECT_EQ(simulation_json(a, settings(64, faults, 7)).dump(), simulation_json(b, settings(64, faults, 7)).dump());
  }
}

TEST(IsolateSimulator, NamesASlowNodeAt16) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const SimRun run = simulate(settings(16, "slow-node=1@2.0", seed, quiet()));
    ASSERT_EQ(run.faults.size(), 1u);
    const std::string slow = run.labels[static_cast<size_t>(run.faults[0].node)];
    EXPECT_EQ(named(run), std::set<std::string>{slow}) << "seed " << seed;
    const auto v = run.schedule->verdicts();
    EXPECT_EQ(v[static_cast<size_t>(run.faults[0].node)].reasons.at(0).find("link to"), std::string::npos) << "a node, not a link";
    EXPECT_LE(run.schedule->rounds(), round_budget(16));
  }
  // With this cluster's noise: found in most runs, and nothing else named.
  int found = 0, wrong = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const SimRun run = simulate(settings(16, "slow-node=1@2.0", seed));
    const std::string slow = run.labels[static_cast<size_t>(run.faults[0].node)];
    const auto n = named(run);
    found += n.count(slow) > 0;
    wrong += static_cast<int>(n.size()) - static_cast<int>(n.count(slow));
  }
  EXPECT_GE(found, 18);
  EXPECT_LE(wrong, 1);
}

// A node that corrupts every test is named for it, with its own code and
// nobody else, at 16 and 64 nodes; one that corrupts some tests is named
// alone or with the one partner it was seen with (a code of its own).
TEST(IsolateSimulator, NamesACorruptingNodeWithItsCode) {
  for (int n : {16, 64}) {
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      const SimRun run = simulate(settings(n, "corrupt=2", seed));
      ASSERT_EQ(run.faults.size(), 2u);
      std::set<std::string> want;
      const auto v = run.schedule->verdicts();
      for (const auto& f : run.faults) {
        want.insert(run.labels[static_cast<size_t>(f.node)]);
        EXPECT_EQ(v[static_cast<size_t>(f.node)].code, results::code::kIsolateCorruption) << n << " seed " << seed;
      }
      EXPECT_EQ(named(run), want) << n << " seed " << seed;
    }
  }
  int alone = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const SimRun run = simulate(settings(64, "corrupt=1@0.3", seed));
    const int bad = run.faults.at(0).node;
    const auto v = run.schedule->verdicts();
    const auto got = named(run);
    if (got.empty()) continue;  // never seen: nothing to place
    EXPECT_TRUE(got.count(run.labels[static_cast<size_t>(bad)])) << "seed " << seed;
    if (got.size() == 1) {
      ++alone;
      EXPECT_EQ(v[static_cast<size_t>(bad)].code, results::code::kIsolateCorruption);
    } else {
      EXPECT_EQ(got.size(), 2u) << "seed " << seed;
      for (size_t i = 0; i < v.size(); ++i) {
        if (v[i].failed) {
          EXPECT_EQ(v[i].code, results::code::kIsolateCorruptionUnplaced) << "seed " << seed;
        }
      }
    }
  }
  EXPECT_GE(alone, 15);
}

TEST(IsolateSimulator, NamesASlowUplinkAsLinksAcrossIt) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    SimSettings s = settings(16, "slow-link=1@2.0", seed, quiet());
    s.racks = 4;
    const SimRun run = simulate(s);
    ASSERT_EQ(run.faults.size(), 1u);
    const auto& f = run.faults[0];
    EXPECT_NE(f.link.find(" -> spine"), std::string::npos) << f.link;
    ASSERT_EQ(f.below.size(), 4u);
    const std::set<int> below(f.below.begin(), f.below.end());
    const auto v = run.schedule->verdicts();
    int links = 0;
    static const std::regex link_to("link to (sim-[0-9]+) ");
    for (size_t i = 0; i < v.size(); ++i) {
      for (const auto& r : v[i].reasons) {
        std::smatch m;
        ASSERT_TRUE(std::regex_search(r, m, link_to)) << "seed " << seed << ": a node named, not a link: " << r;
        const auto other = std::find(run.labels.begin(), run.labels.end(), m[1].str()) - run.labels.begin();
        EXPECT_NE(below.count(static_cast<int>(i)), below.count(static_cast<int>(other))) << "a named link that does not cross " << f.link;
        ++links;
      }
    }
    EXPECT_GT(links, 0) << "seed " << seed << ": the slow uplink was not found";
  }
}

TEST(IsolateSimulator, AStalledNodeIsNamedAndItsRoundEndsAtTheBound) {
  SimSettings s = settings(16, "stall=1", 3, quiet());
  s.round_bound_s = 38;
  const SimRun run = simulate(s);
  const std::string stalled = run.labels[static_cast<size_t>(run.faults[0].node)];
  EXPECT_EQ(named(run), std::set<std::string>{stalled});
  EXPECT_NE(run.schedule->verdicts()[static_cast<size_t>(run.faults[0].node)].reasons.at(0).find("did not answer"), std::string::npos);
  EXPECT_GE(run.seconds, 38);
  EXPECT_LT(run.seconds, 2 * 38);
}

TEST(IsolateSimulator, TheScannerScheduleRePairsOnce) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    SimSettings s = settings(16, "slow-node=1@2.0", seed, quiet());
    s.chs = true;
    const SimRun run = simulate(s);
    EXPECT_EQ(named(run), std::set<std::string>{run.labels[static_cast<size_t>(run.faults[0].node)]}) << "seed " << seed;
    EXPECT_EQ(run.schedule->rounds(), 2);
  }
}

TEST(IsolateSimulator, RefusesFaultsTheFabricCannotHold) {
  EXPECT_THROW(simulate(settings(16, "slow-node=5,stall=4", 1)), UsageError);  // more than half
  SimSettings s = settings(16, "slow-link=2,flap=1", 1);
  s.racks = 2;  // two uplinks
  EXPECT_THROW(simulate(s), UsageError);
  s.faults = parse_fault_spec("slow-link=2");
  EXPECT_NO_THROW(simulate(s));
  EXPECT_THROW(simulate(settings(1, "", 1)), UsageError);
}

}  // namespace
}  // namespace smddp::diag
