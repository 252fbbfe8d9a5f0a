// Step schedules (smddp/schedule.h) against counts worked out by hand from
// each algorithm's loop.
#include "smddp/schedule.h"

#include <gtest/gtest.h>

#include <map>

#include "smddp/error.h"

namespace smddp::schedule {
namespace {

constexpr size_t kFloat = 4;

Schedule make1(Collective c, const char* alg, int hosts, int per_host, uint64_t bytes) {
  return make(c, alg, Topology{hosts, per_host}, bytes, kFloat);
}

uint64_t total_bytes(const Schedule& s) {
  uint64_t t = 0;
  for (const Step& st : s.steps) t += st.bytes;
  return t;
}

TEST(Schedule, RingAllreduceIsTwoNMinusOneStepsOfABlock) {
  for (int n : {2, 3, 4, 8}) {
    const uint64_t S = 4096ull * n * kFloat;
    const Schedule s = make1(Collective::AllReduce, "ring", n, 1, S);
    ASSERT_EQ(s.steps.size(), static_cast<size_t>(2 * (n - 1))) << n;
    for (size_t i = 0; i < s.steps.size(); ++i) {
      const Step& st = s.steps[i];
      EXPECT_EQ(st.tier, Tier::Network);
      EXPECT_EQ(st.bytes, S / n);
      EXPECT_EQ(st.messages, 1u);
      EXPECT_EQ(st.flows, 1);
      EXPECT_EQ(st.reduced, i < static_cast<size_t>(n - 1) ? S / n : 0u) << i;
    }
  }
}

TEST(Schedule, RingOnOneHostIsSharedMemory) {
  const Schedule s = make1(Collective::AllReduce, "ring", 1, 4, 1 << 20);
  ASSERT_EQ(s.steps.size(), 6u);
  for (const Step& st : s.steps) {
    EXPECT_EQ(st.tier, Tier::Shm);
    EXPECT_EQ(st.flows, 4);  // every rank of the node copies at once
  }
}

TEST(Schedule, RingAcrossHostsWithTwoRanksEachHasOneFlowPerLink) {
  const Schedule s = make1(Collective::AllReduce, "ring", 2, 2, 4 << 20);
  ASSERT_EQ(s.steps.size(), 6u);
  for (const Step& st : s.steps) {
    EXPECT_EQ(st.tier, Tier::Network);
    EXPECT_EQ(st.bytes, (4u << 20) / 4);
    EXPECT_EQ(st.flows, 1);  // only the host's boundary rank crosses
  }
}

TEST(Schedule, HalvingDoublingPowerOfTwo) {
  const uint64_t S = 8 << 20;
  const Schedule s = make1(Collective::AllReduce, "halving_doubling", 8, 1, S);
  ASSERT_EQ(s.steps.size(), 6u);  // 3 halving, 3 doubling
  const uint64_t expect[] = {S / 2, S / 4, S / 8, S / 8, S / 4, S / 2};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(s.steps[i].bytes, expect[i]) << i;
    EXPECT_EQ(s.steps[i].reduced, i < 3 ? expect[i] : 0u) << i;
  }
  EXPECT_EQ(total_bytes(s), 2 * (S - S / 8));  // 2(n-1)/n S, as the ring
}

TEST(Schedule, HalvingDoublingFixUpForSixRanks) {
  const uint64_t S = 4 << 20;
  const Schedule s = make1(Collective::AllReduce, "halving_doubling", 6, 1, S);
  // fix-up in, 2 halving, 2 doubling, fix-up out
  ASSERT_EQ(s.steps.size(), 6u);
  EXPECT_EQ(s.steps.front().bytes, S);
  EXPECT_EQ(s.steps.front().reduced, S);
  EXPECT_EQ(s.steps[1].bytes, S / 2);
  EXPECT_EQ(s.steps[2].bytes, S / 4);
  EXPECT_EQ(s.steps[3].bytes, S / 4);
  EXPECT_EQ(s.steps[4].bytes, S / 2);
  EXPECT_EQ(s.steps.back().bytes, S);
  EXPECT_EQ(s.steps.back().reduced, 0u);
}

TEST(Schedule, HalvingDoublingAcrossHostsHalvesInsideTheHostFirst) {
  // 2 hosts x 2 ranks: the first halving pairs rank r with r^1 (its host's
  // other rank) over half the vector; only a quarter crosses each way.
  const uint64_t S = 1 << 20;
  const Schedule s = make1(Collective::AllReduce, "halving_doubling", 2, 2, S);
  ASSERT_EQ(s.steps.size(), 4u);
  const Tier tiers[] = {Tier::Shm, Tier::Network, Tier::Network, Tier::Shm};
  const uint64_t bytes[] = {S / 2, S / 4, S / 4, S / 2};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(s.steps[i].tier, tiers[i]) << i;
    EXPECT_EQ(s.steps[i].bytes, bytes[i]) << i;
  }
  EXPECT_EQ(s.steps[1].flows, 2);  // both of a host's ranks cross at once
}

TEST(Schedule, RecursiveDoublingAllreduceExchangesTheWholeVector) {
  const uint64_t S = 8 << 10;
  const Schedule s = make1(Collective::AllReduce, "recursive_doubling", 8, 1, S);
  ASSERT_EQ(s.steps.size(), 3u);  // log2 8 exchanges, one message each
  for (const Step& st : s.steps) {
    EXPECT_EQ(st.bytes, S);
    EXPECT_EQ(st.messages, 1u);
    EXPECT_EQ(st.reduced, S);
  }
  // 6 ranks: the fix-up in, log2 4 exchanges, the fix-up out (nothing reduced).
  const Schedule six = make1(Collective::AllReduce, "recursive_doubling", 6, 1, S);
  ASSERT_EQ(six.steps.size(), 4u);
  EXPECT_EQ(six.steps.front().reduced, S);
  EXPECT_EQ(six.steps.back().bytes, S);
  EXPECT_EQ(six.steps.back().reduced, 0u);
}

TEST(Schedule, CmaAllreduceIsOneStepReadingAndWritingTheOtherSlices) {
  const uint64_t S = 12 << 20;  // above the 2-rank replicated form
  const Schedule s = make1(Collective::AllReduce, "cma", 1, 3, S);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].tier, Tier::Shm);
  EXPECT_EQ(s.steps[0].bytes, 2 * 2 * (S / 3));  // read 2 slices, write 2
  EXPECT_EQ(s.steps[0].reduced, 2 * (S / 3));
  EXPECT_EQ(s.steps[0].messages, 2u * 2 * (S / 3 / (128 << 10)));
}

TEST(Schedule, TreeAllreduceIsTwoLogNLevels) {
  const Schedule s = make1(Collective::AllReduce, "tree", 5, 1, 1024);
  ASSERT_EQ(s.steps.size(), 6u);  // ceil(log2 5) = 3 up, 3 down
  for (const Step& st : s.steps) EXPECT_EQ(st.bytes, 1024u);
  EXPECT_EQ(s.steps[0].reduced, 1024u);
  EXPECT_EQ(s.steps[5].reduced, 0u);
}

TEST(Schedule, ChainBroadcastCarriesTheVectorOnceOverEachHop) {
  // 4 hosts x 2 ranks, 16 MiB: chunks of S / (8 * 7), one chunk step per
  // chunk plus n-2 steps of fill; the 7 hops (3 between hosts) each carry S.
  const uint64_t S = 16 << 20;
  std::vector<Transfer> plan;
  const Schedule s = make(Collective::Broadcast, "chain", Topology{4, 2}, S, kFloat, {}, &plan);
  const uint64_t chunk = (S / kFloat + 55) / 56 * kFloat;
  const uint64_t chunks = (S + chunk - 1) / chunk;
  ASSERT_EQ(s.steps.size(), chunks + 6);
  std::map<std::pair<int, int>, uint64_t> per_hop;
  for (const Transfer& t : plan) per_hop[{t.src, t.dst}] += t.bytes;
  ASSERT_EQ(per_hop.size(), 7u);
  for (const auto& [hop, bytes] : per_hop) {
    EXPECT_EQ(hop.second, hop.first + 1);
    EXPECT_EQ(bytes, S);
  }
  int network = 0;
  for (const Step& st : s.steps) {
    network += st.tier == Tier::Network;
    EXPECT_LE(st.bytes, chunk);
    EXPECT_LE(st.flows, 1.0);  // a host's link carries one chunk each way
  }
  // A chunk crosses hosts in every step but the first and the last, where
  // only the first node's and the last node's own hop runs.
  EXPECT_EQ(network, static_cast<int>(chunks + 4));
  // Up to 16 KiB a single chunk: the chain is n-1 steps of the whole
  // vector; 64 KiB is 4 chunks of 16 KiB, 4 + 2 steps.
  EXPECT_EQ(make1(Collective::Broadcast, "chain", 4, 1, 16 << 10).steps.size(), 3u);
  EXPECT_EQ(make1(Collective::Broadcast, "chain", 4, 1, 64 << 10).steps.size(), 6u);
}

TEST(Schedule, HierarchicalIsNodeThenCrossThenNode) {
  // 4 hosts x 2 ranks, 16 MiB: node reduce-scatter (shm_direct), cross
  // allreduce of 8 MiB blocks (ring: above 1 MiB), node allgather.
  const uint64_t S = 16 << 20;
  const Schedule s = make1(Collective::AllReduce, "hierarchical", 4, 2, S);
  ASSERT_FALSE(s.steps.empty());
  int network = 0;
  for (const Step& st : s.steps) {
    if (st.tier == Tier::Network) {
      ++network;
      EXPECT_EQ(st.bytes, S / 2 / 4);  // a quarter of this rank's block
      EXPECT_EQ(st.flows, 2);          // both local ranks cross at once
      EXPECT_NE(st.phase.find("cross allreduce ring"), std::string::npos) << st.phase;
    }
  }
  EXPECT_EQ(network, 6);  // 2(M-1) ring steps
  EXPECT_EQ(s.steps.front().tier, Tier::Shm);
  EXPECT_EQ(s.steps.back().tier, Tier::Shm);
}

TEST(Schedule, HierarchicalOneRankPerHostIsTheCrossStepAlone) {
  // 1 rank per host: the node phases are no-ops; 256 KiB goes sharded.
  const Schedule s = make1(Collective::AllReduce, "hierarchical", 4, 1, 256 << 10);
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[0].bytes, 3u * (64 << 10));  // 3 sub-shards of 64 KiB out
  EXPECT_EQ(s.steps[0].reduced, 3u * (64 << 10));
  EXPECT_EQ(s.steps[0].messages, 3u);
  EXPECT_EQ(s.steps[0].flows, 1);
  EXPECT_EQ(s.steps[1].bytes, 3u * (64 << 10));
}

TEST(Schedule, ShardedAcrossThreeHosts) {
  const uint64_t S = 6 << 20;
  const Schedule s = make1(Collective::AllReduce, "sharded", 3, 1, S);
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[0].bytes, 2 * S / 3);
  EXPECT_EQ(s.steps[0].messages, 2u);  // 2 MiB sub-shards: one chunk each
  EXPECT_EQ(s.steps[1].bytes, 2 * S / 3);
}

TEST(Schedule, UnevenShardsAreOneFlowNotTwo) {
  // 4 MiB of floats over 3 hosts: shards one element apart, so a link
  // carries a few bytes more than its rank sends. That is one flow; rounded
  // up it was two, and the model predicted sharded 1.5x too slow.
  const Schedule s = make1(Collective::AllReduce, "sharded", 3, 1, 4 << 20);
  ASSERT_EQ(s.steps.size(), 2u);
  for (const Step& st : s.steps) {
    EXPECT_GE(st.flows, 1.0);
    EXPECT_LT(st.flows, 1.001);
  }
  const Schedule hd = make1(Collective::AllReduce, "halving_doubling", 3, 1, 4 << 20);
  for (const Step& st : hd.steps) EXPECT_LT(st.flows, 1.001) << st.phase;
}

TEST(Schedule, ShmDirectAllreduceChunks) {
  // 4 ranks, 3 MiB, 1 MiB slots: 3 chunks of two steps (sliced reduce).
  const Schedule s = make1(Collective::AllReduce, "shm_direct", 1, 4, 3 << 20);
  ASSERT_EQ(s.steps.size(), 6u);
  EXPECT_EQ(s.steps[0].bytes, 1u << 20);
  EXPECT_EQ(s.steps[0].reduced, 3u * (1 << 18));
  // 2 ranks: replicated, one step per chunk.
  EXPECT_EQ(make1(Collective::AllReduce, "shm_direct", 1, 2, 3 << 20).steps.size(), 3u);
}

TEST(Schedule, ShmAlgorithmsDeclineAcrossHosts) {
  const Schedule s = make1(Collective::AllReduce, "shm_direct", 2, 2, 1 << 20);
  EXPECT_TRUE(s.steps.empty());
  EXPECT_FALSE(s.declined.empty());
  EXPECT_FALSE(make1(Collective::AllReduce, "cma", 1, 1, 1 << 20).declined.empty());
  EXPECT_FALSE(make1(Collective::AllGather, "recursive_doubling", 3, 1, 3 << 10).declined.empty());
  EXPECT_FALSE(make1(Collective::AllReduce, "hierarchical", 1, 4, 1 << 20).declined.empty());
}

TEST(Schedule, AllgatherAndReduceScatterRings) {
  const uint64_t S = 4 << 20;  // the row's size: the whole output (input)
  for (Collective c : {Collective::AllGather, Collective::ReduceScatter}) {
    const Schedule s = make1(c, "ring", 4, 1, S);
    ASSERT_EQ(s.steps.size(), 3u);
    for (const Step& st : s.steps) {
      EXPECT_EQ(st.bytes, S / 4);
      EXPECT_EQ(st.reduced, c == Collective::ReduceScatter ? S / 4 : 0u);
    }
  }
}

TEST(Schedule, RecursiveHalvingReduceScatterHalvesInsideTheHostFirst) {
  // 2 hosts x 2 ranks: half the input to the host's other rank, then a
  // quarter across (the ring sends three quarters over each host's link).
  const uint64_t S = 1 << 20;
  const Schedule s = make1(Collective::ReduceScatter, "recursive_halving", 2, 2, S);
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[0].tier, Tier::Shm);
  EXPECT_EQ(s.steps[0].bytes, S / 2);
  EXPECT_EQ(s.steps[0].reduced, S / 2);
  EXPECT_EQ(s.steps[1].tier, Tier::Network);
  EXPECT_EQ(s.steps[1].bytes, S / 4);
  EXPECT_EQ(s.steps[1].reduced, S / 4);
  EXPECT_EQ(s.steps[1].flows, 2);
}

TEST(Schedule, RecursiveHalvingReduceScatterFixUpForSixRanks) {
  // 6 ranks: ranks 0 and 2 hand their whole input to 1 and 3 and get their
  // block back. Virtual ranks 0 and 1 end with two blocks each, 2 and 3 with
  // one. Mask 2 first (no node-mates: the larger mask): virtual rank 2 gives
  // 0 and 1's four blocks, then virtual rank 0 gives 1's two.
  const uint64_t S = 6 << 20;
  const Schedule s = make1(Collective::ReduceScatter, "recursive_halving", 6, 1, S);
  ASSERT_EQ(s.steps.size(), 4u);
  const uint64_t bytes[] = {S, 2 * S / 3, S / 3, S / 6};
  const uint64_t reduced[] = {S, 2 * S / 3, S / 3, 0};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(s.steps[i].bytes, bytes[i]) << i;
    EXPECT_EQ(s.steps[i].reduced, reduced[i]) << i;
  }
}

TEST(Schedule, RecursiveDoublingAndDirectAllgather) {
  const uint64_t S = 8 << 10;
  const Schedule rd = make1(Collective::AllGather, "recursive_doubling", 8, 1, S);
  ASSERT_EQ(rd.steps.size(), 3u);
  EXPECT_EQ(rd.steps[0].bytes, S / 8);
  EXPECT_EQ(rd.steps[2].bytes, S / 2);
  const Schedule d = make1(Collective::AllGather, "direct", 4, 2, S);
  ASSERT_EQ(d.steps.size(), 1u);
  EXPECT_EQ(d.steps[0].bytes, 6 * S / 8);    // to the 6 remote ranks
  EXPECT_EQ(d.steps[0].messages, 6u);
  EXPECT_EQ(d.steps[0].flows, 2);            // both ranks of a host send at once
}

TEST(Schedule, GatherIsAnIncastOnTheRoot) {
  const Schedule s = make1(Collective::Gather, "direct", 5, 1, 5 << 10);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].bytes, 1u << 10);
  EXPECT_EQ(s.steps[0].flows, 4);
}

TEST(Schedule, PairwiseAlltoall) {
  const Schedule s = make1(Collective::AllToAll, "pairwise", 4, 1, 4 << 10);
  ASSERT_EQ(s.steps.size(), 3u);
  for (const Step& st : s.steps) EXPECT_EQ(st.bytes, 1u << 10);
}

TEST(Schedule, AutoTakesTheDefaultSelectorsChoice) {
  EXPECT_EQ(make1(Collective::AllReduce, "auto", 4, 2, 4 << 10).algorithm, "hierarchical");
  EXPECT_EQ(make1(Collective::AllReduce, "auto", 4, 2, 512 << 10).algorithm, "sharded");
  EXPECT_EQ(make1(Collective::AllReduce, "auto", 1, 2, 4 << 10).algorithm, "shm_direct");
  EXPECT_EQ(make1(Collective::ReduceScatter, "auto", 2, 1, 4 << 10).algorithm, "ring");
}

TEST(Schedule, BadInputIsAUsageError) {
  EXPECT_THROW(make1(Collective::AllReduce, "nope", 2, 1, 1024), UsageError);
  EXPECT_THROW(make1(Collective::AllReduce, "ring", 0, 1, 1024), UsageError);
  EXPECT_THROW(make(Collective::AllReduce, "ring", Topology{2, 1}, 1024, 0), UsageError);
}

TEST(Schedule, EveryRegisteredHostAlgorithmHasASchedule) {
  for (Collective c : all_collectives()) {
    for (const std::string& name : algorithms(c)) {
      const Schedule one = make(c, name, Topology{1, 4}, 1 << 20, kFloat);
      const Schedule many = make(c, name, Topology{4, 2}, 1 << 20, kFloat);
      EXPECT_TRUE(!one.steps.empty() || !one.declined.empty()) << to_string(c) << " " << name;
      EXPECT_TRUE(!many.steps.empty() || !many.declined.empty()) << to_string(c) << " " << name;
    }
  }
}

}  // namespace
}  // namespace smddp::schedule
