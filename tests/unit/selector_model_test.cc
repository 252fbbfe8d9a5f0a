// The model-driven selection table (algorithms/model_table.h): synthetic
// models whose best algorithm per size follows in closed form, the
// precedence of the tuning file and SMDDP_ALGORITHM_* over the model, the
// nested steps taking the model's choices, a bad SMDDP_MODEL_FILE. The
// table at scale (proxies carried to the job): model_table_scale_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "algorithms/model_table.h"
#include "algorithms/selector.h"
#include "job_shape_testing.h"
#include "patterns/schedule_for.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "smddp/model/cost_model.h"

using namespace smddp;
using schedule::Tier;
using smddp::testing::job;

namespace {

constexpr size_t kAny = std::numeric_limits<size_t>::max();

// A model with only a network cost: alpha per message, beta per byte.
model_table::Parameters network_model(double alpha_us, double beta_us_per_byte) {
  model_table::Parameters p;
  p.model.tier(Tier::Network).value = {alpha_us, beta_us_per_byte, 0, 0};
  p.model.tier(Tier::Network).determined = {true, true, true, true};
  p.model.tier(Tier::Shm).determined = {true, true, true, true};  // free shared memory
  p.source = "test";
  return p;
}

// The model's rows of one collective and group, in order.
std::vector<SelectionRule> rows(const model_table::Ranked& r, Collective c, GroupKind g) {
  std::vector<SelectionRule> out;
  for (const auto& rule : r.rules) {
    if (rule.collective == c && rule.group == g) out.push_back(rule);
  }
  return out;
}

struct Env {
  Env(const char* name, const std::string& value) : name(name) { setenv(name, value.c_str(), 1); }
  ~Env() { unsetenv(name); }
  const char* name;
};

std::filesystem::path temp_dir() {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("smddp-selmodel-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir;
}

}  // namespace

// 4 hosts x 1 rank, cross-node allreduce of S bytes (per busiest rank):
// recursive doubling 2 messages and 2S bytes; halving-doubling 4 messages
// and 1.5S; ring and sharded 6 messages and 1.5S; tree 4 messages and 4S.
// So recursive doubling wins up to S = 4 alpha / beta (2a + 2Sb = 4a +
// 1.5Sb), halving-doubling from there, and the ring once it is within 2%
// (kNearTie: 6a + 1.5Sb <= 1.02 (4a + 1.5Sb), S >= 6.4 MB).
TEST(ModelTable, LatencyBoundSizesTakeTheFewestMessagesAndTheCrossoverIsClosedForm) {
  const double alpha = 100, beta = 0.001;  // crossovers at 400000 and 6400000 bytes
  const auto r = model_table::rank(network_model(alpha, beta), job(4, 1), {}, default_rules());
  const auto cross = rows(r, Collective::AllReduce, GroupKind::Cross);
  ASSERT_EQ(cross.size(), 3u);
  EXPECT_EQ(cross[0].candidates.front(), "recursive_doubling");
  // The last grid size (a power of two) below the closed-form crossover.
  EXPECT_EQ(cross[0].max_bytes, size_t{262144});
  EXPECT_EQ(cross[1].candidates.front(), "halving_doubling");
  EXPECT_EQ(cross[1].max_bytes, size_t{4194304});
  EXPECT_EQ(cross[2].candidates.front(), "ring");
  EXPECT_EQ(cross[2].max_bytes, kAny);
  // Its predictions are the closed form's, at the range's largest size.
  ASSERT_GE(cross[0].predicted_us.size(), 2u);
  EXPECT_DOUBLE_EQ(cross[0].predicted_us[0], 2 * alpha + 2 * 262144 * beta);
  EXPECT_DOUBLE_EQ(cross[0].predicted_us[1], 4 * alpha + 1.5 * 262144 * beta);
  // The ring's row names it first and halving-doubling, 2% faster or less, next.
  ASSERT_GE(cross[2].predicted_us.size(), 2u);
  EXPECT_EQ(cross[2].candidates[1], "halving_doubling");
  EXPECT_GT(cross[2].predicted_us[0], cross[2].predicted_us[1]);
  EXPECT_LE(cross[2].predicted_us[0], 1.02 * cross[2].predicted_us[1]);
  // And the selector built from them picks accordingly.
  std::vector<SelectionRule> rules = r.rules;
  for (auto& d : default_rules()) rules.push_back(d);
  const Selector s(rules);
  auto first = [&](size_t bytes) {
    return std::string(s.candidates(Collective::AllReduce, Scope::MultiNode, bytes, true, MemoryKind::Host,
                                    GroupKind::Cross)
                           .front()
                           ->info.name);
  };
  EXPECT_EQ(first(8), "recursive_doubling");
  EXPECT_EQ(first(262144), "recursive_doubling");
  EXPECT_EQ(first(262145), "halving_doubling");
  EXPECT_EQ(first(4194304), "halving_doubling");
  EXPECT_EQ(first(4194305), "ring");
  EXPECT_EQ(first(size_t{4} << 30), "ring");
}

TEST(ModelTable, BandwidthBoundLinksTakeTheFewestBytesAtEverySize) {
  // A message costs nothing next to a byte: the ring and halving-doubling
  // (1.5S) tie and beat 2S and 4S from 8 B; the ring, first in the
  // registry, takes the tie.
  const auto r = model_table::rank(network_model(1e-6, 1.0), job(4, 1), {}, default_rules());
  const auto cross = rows(r, Collective::AllReduce, GroupKind::Cross);
  ASSERT_FALSE(cross.empty());
  // Except at 8 B: 2 elements in 4 blocks, whose halves round to whole
  // elements (the busiest rank of halving-doubling and the ring moves
  // 24 B, recursive doubling 16 B).
  ASSERT_LE(cross.size(), 2u);
  if (cross.size() == 2) {
    EXPECT_EQ(cross[0].max_bytes, 8u);
    EXPECT_EQ(cross[0].candidates.front(), "recursive_doubling");
  }
  EXPECT_EQ(cross.back().candidates.front(), "ring");
  EXPECT_EQ(cross.back().max_bytes, kAny);
  // Most bytes last: tree moves 4S.
  EXPECT_EQ(cross.back().candidates.back(), "tree");
}

// Reduce-scatter of S bytes (the whole input) on 6 hosts x 1 rank. The
// ring: 5 steps of S/6. Recursive halving over 4 virtual ranks: the fix-up
// (S), the halvings (2S/3 from the virtual rank that gives away both
// two-block ranks, then S/3), the block back (S/6): 4 steps and 13S/6. So
// recursive halving up to S = 3a / 4b (5a + 5Sb/6 = 4a + 13Sb/6), the ring
// above. On 3 hosts the ring wins at every size (2 steps and 2S/3 against
// 3 and 2S), on 2 hosts x 2 ranks recursive halving (2 steps, the second
// of S/4 across, against 3 of S/4).
TEST(ModelTable, ReduceScatterRecursiveHalvingUntilItsFixUpCostsMoreThanTheRing) {
  const double alpha = 100, beta = 0.001;  // crossover at 75000 bytes
  const auto six = rows(model_table::rank(network_model(alpha, beta), job(6, 1), {}, default_rules()),
                        Collective::ReduceScatter, GroupKind::World);
  ASSERT_EQ(six.size(), 2u);
  EXPECT_EQ(six[0].candidates.front(), "recursive_halving");
  EXPECT_EQ(six[0].max_bytes, size_t{65536});
  EXPECT_EQ(six[1].candidates.front(), "ring");
  EXPECT_EQ(six[1].max_bytes, kAny);
  // The row's predictions at 64 KiB: 16384 floats, 2730 a rank (65520 B).
  ASSERT_EQ(six[0].predicted_us.size(), 2u);
  const double b = 65520;
  EXPECT_NEAR(six[0].predicted_us[0], 4 * alpha + 13 * b / 6 * beta, 1e-9);
  EXPECT_NEAR(six[0].predicted_us[1], 5 * alpha + 5 * b / 6 * beta, 1e-9);

  const auto three = rows(model_table::rank(network_model(alpha, beta), job(3, 1), {}, default_rules()),
                          Collective::ReduceScatter, GroupKind::World);
  ASSERT_EQ(three.size(), 1u);
  EXPECT_EQ(three[0].candidates.front(), "ring");
  const auto two_by_two = rows(model_table::rank(network_model(alpha, beta), job(2, 2), {}, default_rules()),
                               Collective::ReduceScatter, GroupKind::World);
  ASSERT_EQ(two_by_two.size(), 1u);
  EXPECT_EQ(two_by_two[0].candidates.front(), "recursive_halving");
}

// 4 hosts x 1 rank, broadcast of S bytes, ranked as the mean of a call in a
// run of 4 (model_table.cc): (alone + 3 x the busiest rank's share) / 4.
// The binomial tree is 2 steps of S, its root in both: 2(a + Sb) either
// way. The chain is C + 2 steps of one chunk c, each rank sending in C:
// C = S / 16 KiB (at least 1) up to 24 chunks (8 per hop), then c = S / 24;
// its mean is (C + 0.5)(a + cb). With a = 100, b = 0.001: the chain at one
// chunk (1.5 steps against 2), the tree from 2 chunks (32 KiB: 291 us
// against 266) while its bytes cost less than the chain's steps, the chain
// again from 2.3 MB (24.5a + 1.02Sb < 2a + 2Sb).
TEST(ModelTable, BroadcastRankedAsARunOfCallsChainTreeChain) {
  const double alpha = 100, beta = 0.001;
  const auto r = model_table::rank(network_model(alpha, beta), job(4, 1), {}, default_rules());
  const auto world = rows(r, Collective::Broadcast, GroupKind::World);
  ASSERT_EQ(world.size(), 3u);
  EXPECT_EQ(world[0].candidates.front(), "chain");
  EXPECT_EQ(world[0].max_bytes, size_t{16384});
  EXPECT_EQ(world[1].candidates.front(), "tree");
  EXPECT_EQ(world[1].max_bytes, size_t{2} << 20);
  EXPECT_EQ(world[2].candidates.front(), "chain");
  EXPECT_EQ(world[2].max_bytes, kAny);
  ASSERT_EQ(world[0].predicted_us.size(), 2u);
  EXPECT_DOUBLE_EQ(world[0].predicted_us[0], 1.5 * (alpha + 16384 * beta));
  EXPECT_DOUBLE_EQ(world[0].predicted_us[1], 2 * (alpha + 16384 * beta));
  ASSERT_EQ(world[1].predicted_us.size(), 2u);
  const double S = 2 << 20;
  EXPECT_DOUBLE_EQ(world[1].predicted_us[0], 2 * (alpha + S * beta));
  // 24 chunks of 21846 elements, the last 21830: alone 26 steps, the last
  // one carrying only the last chunk; each rank sends in 24 steps, each
  // with a whole chunk on some hop.
  const double alone = 26 * alpha + beta * (25 * 87384.0 + 87320.0);
  const double share = 24 * (alpha + 87384.0 * beta);
  EXPECT_DOUBLE_EQ(world[1].predicted_us[1], (alone + 3 * share) / 4);
}

// On 16 hosts the chain's 15 steps alone outweigh its one-step share at one
// chunk: (15 + 3) / 4 = 4.5 steps against the tree's 4, so the tree keeps
// small broadcasts; an isolated call never costs more than 4x the fastest.
TEST(ModelTable, BroadcastOnManyHostsKeepsTheTreeForSmallCalls) {
  const auto r = model_table::rank(network_model(100, 0.001), job(16, 1), {}, default_rules());
  const auto world = rows(r, Collective::Broadcast, GroupKind::World);
  ASSERT_GE(world.size(), 2u);
  EXPECT_EQ(world.front().candidates.front(), "tree");
  EXPECT_GE(world.front().max_bytes, size_t{16384});
  EXPECT_EQ(world.back().candidates.front(), "chain");
}

// The share of a run of calls: the busiest rank's sending or receiving.
TEST(CostModel, StreamShareIsTheBusiestRanksSteps) {
  model::Model m;
  m.tier(Tier::Network).value = {10, 0.01, 0, 0};
  std::vector<schedule::Transfer> xs;
  // 4x1, 8 KiB: the chain in 3 steps of one chunk, each rank sending in one.
  auto chain = schedule::make(Collective::Broadcast, "chain", {4, 1}, 8192, 4, {}, &xs);
  ASSERT_EQ(chain.steps.size(), 3u);
  EXPECT_DOUBLE_EQ(model::predict_us(m, chain), 3 * (10 + 8192 * 0.01));
  EXPECT_DOUBLE_EQ(model::predict_stream_us(m, chain, xs), 10 + 8192 * 0.01);
  // The tree's root sends in both steps: its share is its whole time.
  auto tree = schedule::make(Collective::Broadcast, "tree", {4, 1}, 8192, 4, {}, &xs);
  EXPECT_DOUBLE_EQ(model::predict_stream_us(m, tree, xs), model::predict_us(m, tree));
  // No transfers listed: every step counts for every rank.
  EXPECT_DOUBLE_EQ(model::predict_stream_us(m, tree, {}), model::predict_us(m, tree));
}

TEST(ModelTable, EveryCollectiveHasContiguousWorldRowsToAnySize) {
  const auto r = model_table::rank(model_table::builtin("socket"), job(2, 2), {}, default_rules());
  for (Collective c : all_collectives()) {
    const auto world = rows(r, c, GroupKind::World);
    ASSERT_FALSE(world.empty()) << to_string(c);
    EXPECT_EQ(world.back().max_bytes, kAny) << to_string(c);
    for (size_t i = 1; i < world.size(); ++i) {
      EXPECT_LT(world[i - 1].max_bytes, world[i].max_bytes) << to_string(c);
      // Adjacent rows have different winners (merged otherwise).
      EXPECT_NE(world[i - 1].candidates.front(), world[i].candidates.front()) << to_string(c);
    }
  }
  // Nothing runs shared-memory algorithms across nodes.
  for (const auto& rule : r.rules) {
    for (const auto& n : rule.candidates) EXPECT_TRUE(n != "shm_direct" && n != "cma") << n;
  }
}

// hierarchical's cross step takes the selector's choice, not a fixed one.
TEST(ModelTable, NestedStepsTakeTheGivenSelectorsChoice) {
  for (const char* inner : {"ring", "halving_doubling"}) {
    SelectionRule cross{Collective::AllReduce, Scope::MultiNode, kAny, {inner}};
    cross.group = GroupKind::Cross;
    std::vector<SelectionRule> rules{cross};
    for (auto& d : default_rules()) rules.push_back(d);
    const Selector s(rules);
    const auto sch = schedule::make_for(s, Collective::AllReduce, "hierarchical", {4, 2}, GroupKind::World, 1 << 20,
                                        4, schedule::Options{});
    bool found = false;
    for (const auto& step : sch.steps) found |= step.phase.find(std::string("cross allreduce ") + inner) == 0;
    EXPECT_TRUE(found) << inner;
  }
}

TEST(ModelTable, BuiltinFiguresPerTransport) {
  const auto socket = model_table::builtin("socket"), fabric = model_table::builtin("fabric");
  EXPECT_LT(fabric.model.tier(Tier::Network).value[1], socket.model.tier(Tier::Network).value[1]);
  EXPECT_NE(socket.source.find("socket"), std::string::npos);
  EXPECT_NE(fabric.source.find("EFA"), std::string::npos);
  // Link figures handed in by a tool replace the network tier's bandwidth.
  JobShape j = job(2, 1);
  j.link = LinkFigures{10.0, 0, "profile p4d.24xlarge"};
  const auto p = model_table::parameters(j);
  EXPECT_DOUBLE_EQ(p.model.tier(Tier::Network).value[1], 1e-4);
  EXPECT_DOUBLE_EQ(p.model.tier(Tier::Network).value[0], socket.model.tier(Tier::Network).value[0]);
  EXPECT_NE(p.source.find("profile p4d.24xlarge"), std::string::npos) << p.source;
}

// The setup probe's bandwidth replaces the built-in figures' only on a link
// under a quarter of theirs; figures handed in by a tool come first.
TEST(ModelTable, ProbedLinkTakesOverOnlyWhenClearlySlower) {
  const auto socket = model_table::builtin("socket");
  const double builtin_gbps = 1e-3 / socket.model.tier(Tier::Network).value[1];
  JobShape j = job(2, 1);
  j.probed = LinkFigures{0.125, 0, "the setup probe (rank 0 on h0 to rank 1 on h1, 4 MiB)"};
  ASSERT_LT(0.125, model_table::kProbeTakesOver * builtin_gbps);
  auto p = model_table::parameters(j);
  EXPECT_DOUBLE_EQ(p.model.tier(Tier::Network).value[1], 0.008);
  EXPECT_DOUBLE_EQ(p.model.tier(Tier::Network).value[0], socket.model.tier(Tier::Network).value[0]);
  EXPECT_EQ(p.source.rfind("link figures from the setup probe", 0), 0u) << p.source;
  // Faster than a quarter: the built-in figures stay, the probe is named.
  j.probed->gbytes_per_s = 0.3 * builtin_gbps;
  p = model_table::parameters(j);
  EXPECT_DOUBLE_EQ(p.model.tier(Tier::Network).value[1], socket.model.tier(Tier::Network).value[1]);
  EXPECT_EQ(p.source.rfind("built-in figures for socket", 0), 0u) << p.source;
  EXPECT_NE(p.source.find("the setup probe"), std::string::npos) << p.source;
  // A tool's figures win over the probe's.
  j.probed->gbytes_per_s = 0.125;
  j.link = LinkFigures{10.0, 0, "profile p4d.24xlarge"};
  p = model_table::parameters(j);
  EXPECT_DOUBLE_EQ(p.model.tier(Tier::Network).value[1], 1e-4);
  // The ranking follows: a 2x2 allgather at 64 KiB takes the ring once the
  // link is 1 Gbit/s (3/4 of the bytes on each host's link, against
  // recursive doubling's all of them).
  auto first_at = [](const model_table::Parameters& params, size_t bytes) {
    for (const auto& r : rows(model_table::rank(params, job(2, 2), {}, default_rules()), Collective::AllGather,
                              GroupKind::World)) {
      if (bytes <= r.max_bytes) return r.candidates.front();
    }
    return std::string();
  };
  JobShape slow = job(2, 2);
  slow.probed = LinkFigures{0.125, 0, "probe"};
  EXPECT_EQ(first_at(model_table::parameters(slow), 65536), "ring");
  EXPECT_NE(first_at(model_table::builtin("socket"), 65536), "ring");
}

TEST(ModelTable, LinkProbeIsWantedOnlyWhereItCanMatter) {
  EXPECT_TRUE(model_table::wants_link_probe(job(2, 1, "socket")));
  EXPECT_TRUE(model_table::wants_link_probe(job(2, 1, "mpi")));
  EXPECT_FALSE(model_table::wants_link_probe(job(2, 1, "fabric")));  // EFA's figures: several NICs
  JobShape handed = job(2, 1);
  handed.link = LinkFigures{10.0, 0, "profile"};
  EXPECT_FALSE(model_table::wants_link_probe(handed));
  {
    Env off("SMDDP_LINK_PROBE", "0");
    EXPECT_FALSE(model_table::wants_link_probe(job(2, 1)));
  }
  const auto dir = temp_dir();
  const std::string path = (dir / "probe-fit.json").string();
  std::ofstream(path) << "{}";  // read only when the table is built
  {
    Env model("SMDDP_MODEL_FILE", path);
    EXPECT_FALSE(model_table::wants_link_probe(job(2, 1)));
  }
  std::filesystem::remove_all(dir);
}

TEST(ModelTable, ModelFileTiersAndItsUndeterminedTierFromTheBuiltins) {
  const auto dir = temp_dir();
  const std::string path = (dir / "fit.json").string();
  model::Model m;
  m.tier(Tier::Network).value = {7, 0.5, 0, 0};
  m.tier(Tier::Network).determined = {true, true, true, true};
  for (auto& n : m.tier(Tier::Shm).note) n = "no data";  // one rank per host in the fit
  std::ofstream(path) << model::to_json(m).dump();
  Env e("SMDDP_MODEL_FILE", path);
  const auto p = model_table::parameters(job(2, 2, "mpi"));
  EXPECT_DOUBLE_EQ(p.model.tier(Tier::Network).value[0], 7);
  EXPECT_DOUBLE_EQ(p.model.tier(Tier::Shm).value[1], model_table::builtin("mpi").model.tier(Tier::Shm).value[1]);
  EXPECT_NE(p.source.find(path), std::string::npos) << p.source;
  EXPECT_NE(p.source.find("shm tier has no data"), std::string::npos) << p.source;
  std::filesystem::remove_all(dir);
}

TEST(ModelTable, BadModelFileIsOneUsageErrorNamingIt) {
  const auto dir = temp_dir();
  const std::string path = (dir / "bad.json").string();
  std::ofstream(path) << "{\"format\": \"smddp-model\", \"version\": 1, \"tiers\": {}}";
  Env e("SMDDP_MODEL_FILE", path);
  for (int i = 0; i < 2; ++i) {
    std::string why;
    try {
      if (i == 0) {
        (void)Selector::from_environment(job(2, 2));
      } else {
        config::check(config::kEngine);  // what programs run before the ranks connect
      }
    } catch (const UsageError& err) {
      why = err.what();
    }
    EXPECT_NE(why.find("SMDDP_MODEL_FILE"), std::string::npos) << why;
    EXPECT_NE(why.find(path), std::string::npos) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  }
  std::filesystem::remove_all(dir);
}

// Precedence: explicit argument > SMDDP_ALGORITHM_<COLL> > SMDDP_TUNING_FILE
// > the model's table > the data rows.
TEST(ModelTable, TuningFileAndEnvironmentBeatTheModel) {
  const auto dir = temp_dir();
  const std::string rules = (dir / "rules").string();
  std::ofstream(rules) << "allreduce multi inf tree\n";
  CallShape shape;
  shape.collective = Collective::AllReduce;
  shape.group = GroupKind::World;
  shape.group_size = 4;
  shape.nodes = 2;
  shape.ranks_per_node = 2;
  shape.bytes = 64 << 20;
  {
    // The model alone: its winner, not the data rows' (hierarchical).
    const Selector s = Selector::from_environment(job(2, 2));
    const auto r = model_table::rank(model_table::parameters(job(2, 2)), job(2, 2), {}, default_rules());
    std::string want;
    for (const auto& rule : rows(r, Collective::AllReduce, GroupKind::World)) {
      if (shape.bytes <= rule.max_bytes && want.empty()) want = rule.candidates.front();
    }
    EXPECT_EQ(s.choose(shape, "auto").info.name, want);
    const auto t = s.table(job(2, 2));
    EXPECT_FALSE(t.parameters.empty());
    EXPECT_EQ(t.modelled_hosts, 2);
  }
  {
    Env tuning("SMDDP_TUNING_FILE", rules);
    const Selector s = Selector::from_environment(job(2, 2));
    EXPECT_EQ(s.choose(shape, "auto").info.name, "tree");
    // The tuning rule also makes the cross-node groups' choice inside hierarchical.
    shape.group = GroupKind::Cross;
    shape.group_size = 2;
    EXPECT_EQ(s.choose(shape, "auto").info.name, "tree");
    shape.group = GroupKind::World;
    shape.group_size = 4;
    Env forced("SMDDP_ALGORITHM_ALLREDUCE", "ring");
    const Selector f = Selector::from_environment(job(2, 2));
    EXPECT_EQ(f.choose(shape, "auto").info.name, "ring");
    EXPECT_EQ(f.choose(shape, "halving_doubling").info.name, "halving_doubling");
  }
  std::filesystem::remove_all(dir);
}

TEST(ModelTable, TableCoversEverySizeOnceWithItsSource) {
  const Selector s = Selector::from_environment(job(4, 2));
  const auto t = s.table(job(4, 2));
  ASSERT_FALSE(t.ranges.empty());
  bool model = false, measured = false;
  for (size_t i = 0; i < t.ranges.size(); ++i) {
    const auto& r = t.ranges[i];
    const bool starts = i == 0 || t.ranges[i - 1].collective != r.collective || t.ranges[i - 1].group != r.group;
    if (starts) {
      EXPECT_EQ(r.min_bytes, 0u) << to_string(r.collective) << " " << r.group;
    } else {
      EXPECT_EQ(r.min_bytes, t.ranges[i - 1].max_bytes + 1);
    }
    const bool ends = i + 1 == t.ranges.size() || t.ranges[i + 1].collective != r.collective ||
                      t.ranges[i + 1].group != r.group;
    if (ends) {
      EXPECT_EQ(r.max_bytes, kAny) << to_string(r.collective) << " " << r.group;
    }
    EXPECT_FALSE(r.source.empty());
    model |= r.source == "model" && r.group != "node";
    measured |= r.group == "node" && r.source.find("measured") != std::string::npos;
  }
  EXPECT_TRUE(model);
  EXPECT_TRUE(measured);
}

// Setup cost at scale, printed for the record (docs/engine.md); no
// assertion on time.
