#include "algorithms/selector.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "smddp/error.h"

using namespace smddp;

namespace {

// A topology of `nodes` nodes with `per_node` ranks each, seen from rank 0.
Topology topology(int nodes, int per_node) {
  Topology t;
  t.size = nodes * per_node;
  t.num_nodes = nodes;
  t.local_size = per_node;
  for (int r = 0; r < t.size; ++r) {
    t.hosts.push_back("host" + std::to_string(r / per_node));
    t.pids.push_back(1000 + r);
    t.node_of.push_back(r / per_node);
  }
  t.node_ranks.assign(nodes, {});
  for (int r = 0; r < t.size; ++r) t.node_ranks[r / per_node].push_back(r);
  return t;
}

Group world(const Topology& t) {
  Group g;
  for (int r = 0; r < t.size; ++r) g.ranks.push_back(r);
  return g;
}

Call allreduce(size_t bytes) {
  Call c;
  c.collective = Collective::AllReduce;
  c.dtype = DataType::Uint8;
  c.count = bytes;
  return c;
}

struct Fixture {
  explicit Fixture(Topology topo) : t(std::move(topo)), router(t, nullptr, nullptr) {}
  Topology t;
  Router router;
};

}  // namespace

// The data rows: what a selector without a job (no model) takes across
// nodes, and the measured single-node choices every selector keeps. A job's
// model-driven rows are selector_model_test's.
TEST(Selector, DefaultsAreOrderedBySize) {
  Selector s(default_rules());
  auto small = s.candidates(Collective::AllReduce, Scope::MultiNode, 8);
  auto large = s.candidates(Collective::AllReduce, Scope::MultiNode, 64 << 20);
  ASSERT_FALSE(small.empty());
  ASSERT_FALSE(large.empty());
  // Across nodes: hierarchical for latency, the sharded exchange for mid
  // sizes, hierarchical again when the links are the bound.
  EXPECT_EQ(small.front()->info.name, "hierarchical");
  EXPECT_EQ(s.candidates(Collective::AllReduce, Scope::MultiNode, 512 << 10).front()->info.name, "sharded");
  EXPECT_EQ(large.front()->info.name, "hierarchical");
  // A cross group alone (one rank per node, hierarchical declines): one
  // whole-vector exchange per partner up to 32 KiB, halving-doubling above.
  auto second = [&](size_t bytes) { return s.candidates(Collective::AllReduce, Scope::MultiNode, bytes)[1]->info.name; };
  EXPECT_EQ(second(8), "recursive_doubling");
  EXPECT_EQ(second(32 << 10), "recursive_doubling");
  EXPECT_EQ(second((32 << 10) + 1), "halving_doubling");
  EXPECT_EQ(s.candidates(Collective::AllReduce, Scope::SingleNode, 8).front()->info.name, "shm_direct");
  // Every default names registered algorithms.
  for (const auto& rule : default_rules()) {
    for (const auto& name : rule.candidates) {
      EXPECT_NE(find_algorithm(rule.collective, name), nullptr) << name;
    }
  }
}

TEST(Selector, DeclinedCandidateFallsThrough) {
  // One rank per node: no shm steps, so shm_direct declines.
  Fixture f(topology(1, 1));
  Selector s(default_rules());
  Context ctx(f.router, f.t, nullptr, s);
  const Algorithm& a = s.choose(ctx, world(f.t), allreduce(1024), "auto");
  EXPECT_EQ(a.info.name, "halving_doubling");
}

TEST(Selector, ForcedAlgorithm) {
  Fixture f(topology(2, 2));
  Selector s(default_rules());
  Context ctx(f.router, f.t, nullptr, s);
  EXPECT_EQ(s.choose(ctx, world(f.t), allreduce(8), "ring").info.name, "ring");
  EXPECT_THROW(s.choose(ctx, world(f.t), allreduce(8), "nope"), UsageError);
  // shm_direct cannot span two nodes: a forced choice is a usage error.
  EXPECT_THROW(s.choose(ctx, world(f.t), allreduce(8), "shm_direct"), UsageError);
  // Across nodes, large vectors go hierarchical.
  EXPECT_EQ(s.choose(ctx, world(f.t), allreduce(64 << 20), "auto").info.name, "hierarchical");
}

TEST(Selector, SingleCopyAllreduceNeedsDedicatedCores) {
  Selector s(default_rules());
  EXPECT_EQ(s.candidates(Collective::AllReduce, Scope::SingleNode, 8 << 20).front()->info.name, "cma");
  EXPECT_EQ(s.candidates(Collective::AllReduce, Scope::SingleNode, 1 << 20).front()->info.name, "cma");
  EXPECT_EQ(s.candidates(Collective::AllReduce, Scope::SingleNode, 512 << 10).front()->info.name, "shm_direct");
  EXPECT_EQ(s.candidates(Collective::AllReduce, Scope::SingleNode, 64 << 10).front()->info.name, "shm_direct");
  // Ranks sharing cores: the dedicated_cores rows do not apply.
  EXPECT_EQ(s.candidates(Collective::AllReduce, Scope::SingleNode, 1 << 20, false).front()->info.name, "shm_direct");
  EXPECT_EQ(s.candidates(Collective::AllReduce, Scope::SingleNode, 8 << 20, false).front()->info.name, "shm_direct");
}

TEST(Selector, SingleCopyCrossoversDependOnCores) {
  Selector s(default_rules());
  EXPECT_EQ(s.candidates(Collective::AllToAll, Scope::SingleNode, 128 << 10).front()->info.name, "shm_direct");
  EXPECT_EQ(s.candidates(Collective::AllToAll, Scope::SingleNode, 256 << 10).front()->info.name, "cma");
  EXPECT_EQ(s.candidates(Collective::Broadcast, Scope::SingleNode, 512 << 10).front()->info.name, "shm_direct");
  EXPECT_EQ(s.candidates(Collective::Broadcast, Scope::SingleNode, 1 << 20).front()->info.name, "cma");
  // Ranks sharing cores: the dedicated_cores rows do not apply.
  EXPECT_EQ(s.candidates(Collective::AllToAll, Scope::SingleNode, 2 << 20, false).front()->info.name, "shm_direct");
  EXPECT_EQ(s.candidates(Collective::AllToAll, Scope::SingleNode, 4 << 20, false).front()->info.name, "cma");
  EXPECT_EQ(s.candidates(Collective::Broadcast, Scope::SingleNode, 1 << 20, false).front()->info.name, "cma");
}

TEST(Selector, EnvironmentForcesTheCallersCollectiveOnly) {
  // SMDDP_ALGORITHM_ALLREDUCE=hierarchical must not force the cross-node
  // allreduce that hierarchical itself runs (it would decline there).
  setenv("SMDDP_ALGORITHM_ALLREDUCE", "hierarchical", 1);
  Selector s = Selector::from_environment();
  unsetenv("SMDDP_ALGORITHM_ALLREDUCE");
  Fixture f(topology(2, 2));
  Context ctx(f.router, f.t, nullptr, s);
  EXPECT_EQ(s.choose(ctx, world(f.t), allreduce(8), "auto").info.name, "hierarchical");
  Group cross;
  cross.kind = GroupKind::Cross;
  cross.ranks = {0, 2};
  EXPECT_NE(s.choose(ctx, cross, allreduce(8), "auto").info.name, "hierarchical");
}

// SMDDP_TUNING_FILE goes through common's bounded reader: a FIFO with no
// writer is refused at once (a blocking open would hang until the test's
// time limit), a regular file is read.
TEST(Selector, TuningFileThatIsAFifoIsRefusedNotWaitedOn) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("smddp-tuning-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string fifo = (dir / "fifo").string(), file = (dir / "rules").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::ofstream(file) << "allreduce single inf ring\n";
  setenv("SMDDP_TUNING_FILE", fifo.c_str(), 1);
  std::string why;
  try {
    (void)Selector::from_environment();
  } catch (const UsageError& e) {
    why = e.what();
  }
  setenv("SMDDP_TUNING_FILE", file.c_str(), 1);
  EXPECT_NO_THROW((void)Selector::from_environment());
  unsetenv("SMDDP_TUNING_FILE");
  fs::remove_all(dir);
  EXPECT_NE(why.find("SMDDP_TUNING_FILE"), std::string::npos) << why;
  EXPECT_NE(why.find("not a regular file"), std::string::npos) << why;
}

TEST(Selector, RecursiveDoublingDeclinesNonPowerOfTwo) {
  Fixture f(topology(3, 1));
  Selector s(default_rules());
  Context ctx(f.router, f.t, nullptr, s);
  Call c;
  c.collective = Collective::AllGather;
  c.dtype = DataType::Uint8;
  c.blocks = patterns::Partition::equal(4, 3);
  EXPECT_EQ(s.choose(ctx, world(f.t), c, "auto").info.name, "ring");
}

TEST(Selector, PlacementDecidesSingleCopy) {
  Selector s(default_rules());
  Placement spare;
  Placement shared;
  shared.any_host_oversubscribed = true;
  EXPECT_EQ(s.candidates(Collective::AllReduce, Scope::SingleNode, 8 << 20, spare.cores_to_spare())
                .front()->info.name, "cma");
  EXPECT_EQ(s.candidates(Collective::AllReduce, Scope::SingleNode, 8 << 20, shared.cores_to_spare())
                .front()->info.name, "shm_direct");
}

TEST(Selector, DeviceMemoryHasItsOwnRules) {
  Selector s(default_rules());
  // Host rules never answer for device buffers; CUDA builds add cuda_staged.
  auto device = s.candidates(Collective::AllReduce, Scope::SingleNode, 8 << 20, true, MemoryKind::Cuda);
#if SMDDP_CUDA_ENABLED
  ASSERT_FALSE(device.empty());
  EXPECT_EQ(device.front()->info.name, "cuda_staged");
#else
  EXPECT_TRUE(device.empty());
#endif
  // A host-only algorithm forced on device buffers is a usage error.
  Fixture f(topology(1, 2));
  Context ctx(f.router, f.t, nullptr, s);
  Call c = allreduce(64);
  c.memory = MemoryKind::Cuda;
  EXPECT_THROW(s.choose(ctx, world(f.t), c, "ring"), UsageError);
}

TEST(Selector, UnknownNameInARuleIsRefusedUpFront) {
  std::vector<SelectionRule> rules = {{Collective::AllReduce, Scope::SingleNode, 64, {"warp"}}};
  EXPECT_THROW(Selector{rules}, UsageError);
}

TEST(Selector, TuningFileRulesComeFirst) {
  auto rules = parse_tuning("# comment\nallreduce multi 1048576 ring\n\nallreduce single inf tree # x\n", "t");
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].max_bytes, 1048576u);
  EXPECT_EQ(rules[1].scope, Scope::SingleNode);
  for (auto& r : default_rules()) rules.push_back(r);
  Selector s(rules);
  EXPECT_EQ(s.candidates(Collective::AllReduce, Scope::MultiNode, 4096).front()->info.name, "ring");
  EXPECT_EQ(s.candidates(Collective::AllReduce, Scope::MultiNode, 2 << 20).front()->info.name, "hierarchical");
  EXPECT_EQ(s.candidates(Collective::AllReduce, Scope::SingleNode, 8).front()->info.name, "tree");
}

// max_bytes is a size as everywhere (docs/bench.md#sizes), blanks before the unit too.
TEST(Selector, TuningFileSizesTakeTheOneGrammar) {
  auto rules = parse_tuning("allreduce multi 64K ring\nallreduce multi 64 KiB ring\nallreduce single 1.5M tree\n"
                            "allreduce single 1e3 tree\n",
                            "t");
  ASSERT_EQ(rules.size(), 4u);
  EXPECT_EQ(rules[0].max_bytes, 65536u);
  EXPECT_EQ(rules[1].max_bytes, 65536u);
  EXPECT_EQ(rules[2].max_bytes, 1572864u);
  EXPECT_EQ(rules[3].max_bytes, 1000u);
}

TEST(Selector, TuningFileErrorsNameTheLine) {
  auto expect_error = [](const char* text, const char* needle) {
    try {
      parse_tuning(text, "tune.txt");
      FAIL() << "accepted: " << text;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error("allreduce multi 10\n", "tune.txt:1");
  expect_error("\nfoo multi 10 ring\n", "tune.txt:2: unknown collective");
  expect_error("allreduce both 10 ring\n", "scope");
  expect_error("allreduce multi ten ring\n", "max_bytes");
  expect_error("allreduce multi 0x10 ring\n", "tune.txt:1: max_bytes must be inf or a byte count like 8, 4K, 1.5M or 64 MiB "
                                              "(docs/bench.md#sizes), not '0x10' (hexadecimal)");
  expect_error("allreduce multi 1.5 ring\n", "(not a whole number of bytes)");
  expect_error("allreduce multi 64 KiB ring extra\n", "tune.txt:1: expected '<collective>");
  expect_error("allreduce multi 10 warp\n", "no allreduce algorithm named 'warp'");
}
