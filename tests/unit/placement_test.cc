// The placement verdict as a pure function of the ranks' CPU masks: the
// launches mpirun makes on a 2-core host, and the cases between.
#include "core/placement.h"

#include <gtest/gtest.h>

#include <vector>

using namespace smddp;

namespace {

std::vector<RankCpus> ranks(std::initializer_list<CpuMask> masks) {
  std::vector<RankCpus> out;
  for (const CpuMask& m : masks) out.push_back({m, 1});
  return out;
}

Placement judge(const std::vector<RankCpus>& r, const std::vector<int>& host_of, int me) {
  return judge_placement(r, host_of, me);
}

}  // namespace

TEST(Placement, BoundToACoreEachIsNotOversubscribed) {
  // mpirun's default for 2 ranks: one core each. Each rank alone sees one
  // CPU; together the host has a core per rank.
  auto r = ranks({CpuMask::of({0}), CpuMask::of({1})});
  for (int me : {0, 1}) {
    Placement p = judge(r, {0, 0}, me);
    EXPECT_FALSE(p.oversubscribed);
    EXPECT_TRUE(p.dedicated_cores);
    EXPECT_TRUE(p.cores_to_spare());
    EXPECT_EQ(p.host_ranks, 2);
    EXPECT_EQ(p.host_cpus, 2);
  }
}

TEST(Placement, UnboundRanksOnEnoughCpusAreNotOversubscribed) {
  // --bind-to none (and --bind-to socket on one socket): every rank may use
  // every CPU; none has one to itself, but each can get one.
  auto r = ranks({CpuMask::of({0, 1}), CpuMask::of({0, 1})});
  Placement p = judge(r, {0, 0}, 0);
  EXPECT_FALSE(p.oversubscribed);
  EXPECT_FALSE(p.dedicated_cores);
  EXPECT_TRUE(p.cores_to_spare());
}

TEST(Placement, MoreRanksThanCpusIsOversubscribed) {
  auto r = ranks({CpuMask::of({0, 1}), CpuMask::of({0, 1}), CpuMask::of({0, 1}), CpuMask::of({0, 1})});
  Placement p = judge(r, {0, 0, 0, 0}, 2);
  EXPECT_TRUE(p.oversubscribed);
  EXPECT_FALSE(p.dedicated_cores);
  EXPECT_FALSE(p.cores_to_spare());
  EXPECT_EQ(p.host_cpus, 2);
}

TEST(Placement, RanksConfinedToTheSameCpusAreOversubscribed) {
  // Four CPUs in the union, but ranks 0-2 may only use CPUs 0 and 1.
  auto r = ranks({CpuMask::of({0, 1}), CpuMask::of({0, 1}), CpuMask::of({0, 1}), CpuMask::of({2, 3})});
  EXPECT_TRUE(judge(r, {0, 0, 0, 0}, 0).oversubscribed);
  // Rank 3 still has CPUs of its own.
  EXPECT_TRUE(judge(r, {0, 0, 0, 0}, 3).dedicated_cores);
  // Two ranks bound to one core (4 ranks on 2 cores, --bind-to core).
  auto pinned = ranks({CpuMask::of({0}), CpuMask::of({1}), CpuMask::of({0}), CpuMask::of({1})});
  Placement p = judge(pinned, {0, 0, 0, 0}, 1);
  EXPECT_TRUE(p.oversubscribed);
  EXPECT_FALSE(p.dedicated_cores);
}

TEST(Placement, OverlappingMasksThatStillFitAreNotOversubscribed) {
  // {0,1}, {1}: rank 0 takes CPU 0, rank 1 CPU 1.
  auto r = ranks({CpuMask::of({0, 1}), CpuMask::of({1})});
  Placement p0 = judge(r, {0, 0}, 0);
  EXPECT_FALSE(p0.oversubscribed);
  EXPECT_TRUE(p0.dedicated_cores);
  EXPECT_FALSE(judge(r, {0, 0}, 1).dedicated_cores);
}

TEST(Placement, HostsAreJudgedApartAndTheWorstDecidesSelection) {
  // Host 0 fits, host 1 runs two ranks on one CPU.
  auto r = ranks({CpuMask::of({0}), CpuMask::of({1}), CpuMask::of({0}), CpuMask::of({0})});
  const std::vector<int> host_of = {0, 0, 1, 1};
  Placement fits = judge(r, host_of, 0);
  EXPECT_FALSE(fits.oversubscribed);
  EXPECT_EQ(fits.host_ranks, 2);
  // Every rank must choose the same algorithm: host 1 decides for all.
  EXPECT_FALSE(fits.cores_to_spare());
  EXPECT_TRUE(judge(r, host_of, 3).oversubscribed);
}

TEST(Placement, OneRankAlone) {
  auto r = ranks({CpuMask::of({3})});
  Placement p = judge(r, {0}, 0);
  EXPECT_FALSE(p.oversubscribed);
  EXPECT_TRUE(p.dedicated_cores);
  EXPECT_EQ(p.numa_nodes, 1u);
}

TEST(Placement, CpuListParses) {
  CpuMask m = parse_cpu_list("0-2,5,7-8\n");
  EXPECT_EQ(m.count(), 6);
  EXPECT_TRUE(m.has(0) && m.has(2) && m.has(5) && m.has(8));
  EXPECT_FALSE(m.has(3));
  EXPECT_TRUE(parse_cpu_list("").empty());
  EXPECT_TRUE(parse_cpu_list("3-1").empty());
  EXPECT_TRUE(parse_cpu_list("x").empty());
  EXPECT_TRUE(parse_cpu_list("0-99999").empty());
}

TEST(Placement, ThisProcessHasCpus) {
  RankCpus me = probe_this_rank();
  EXPECT_GT(me.cpus.count(), 0);
}
