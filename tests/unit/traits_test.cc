// The traits rows (smddp/traits.h) against what the rest of the engine
// assumes: every collective has a name that parses back, buffer counts that
// follow its extents, a host algorithm and a default choice in every scope.
#include "smddp/traits.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "algorithms/selector.h"
#include "smddp/algorithms.h"
#include "smddp/communicator.h"

using namespace smddp;

TEST(Traits, NamesRoundTrip) {
  ASSERT_EQ(all_collectives().size(), static_cast<size_t>(kNumCollectives));
  for (Collective c : all_collectives()) {
    EXPECT_EQ(to_string(c), traits(c).name);
    EXPECT_EQ(parse_collective(to_string(c)), c);
  }
}

TEST(Traits, BufferCountsFollowExtents) {
  const size_t count = 5;
  const int n = 3;
  EXPECT_EQ(buffer_counts(Collective::Gather, count, n).send, count);
  EXPECT_EQ(buffer_counts(Collective::Gather, count, n).recv, count * n);
  EXPECT_EQ(buffer_counts(Collective::Scatter, count, n).send, count * n);
  EXPECT_EQ(buffer_counts(Collective::Scatter, count, n).recv, count);
  EXPECT_EQ(buffer_counts(Collective::SendRecv, count, n).recv, count);
  EXPECT_EQ(buffer_counts(Collective::Barrier, count, n).send, 0u);
  const size_t sends[] = {1, 0, 7}, recvs[] = {2, 2, 2};
  const BufferCounts v = buffer_counts(Collective::AllToAllV, 0, n, sends, recvs);
  EXPECT_EQ(v.send, 8u);
  EXPECT_EQ(v.recv, 6u);
}

TEST(Traits, RootsAndReductions) {
  for (Collective c : {Collective::Broadcast, Collective::Reduce, Collective::Gather, Collective::Scatter}) {
    EXPECT_TRUE(collective_has_root(c)) << to_string(c);
  }
  EXPECT_TRUE(traits(Collective::Gather).receives_on(2, 2));
  EXPECT_FALSE(traits(Collective::Gather).receives_on(1, 2));
  EXPECT_FALSE(traits(Collective::Scatter).sends_on(1, 2));
  EXPECT_FALSE(collective_reduces(Collective::AllToAllV));
  EXPECT_DOUBLE_EQ(traits(Collective::Gather).bus_factor(4), 0.75);
  EXPECT_DOUBLE_EQ(traits(Collective::SendRecv).bus_factor(4), 1.0);
}

TEST(Traits, EveryCollectiveHasAHostAlgorithmAndDefaults) {
  const Selector s(default_rules());
  for (Collective c : all_collectives()) {
    const auto algos = list_algorithms();
    EXPECT_TRUE(std::any_of(algos.begin(), algos.end(),
                            [&](const AlgorithmInfo& a) { return a.collective == c && a.host_memory; }))
        << to_string(c);
    for (Scope scope : {Scope::SingleNode, Scope::MultiNode}) {
      EXPECT_FALSE(s.candidates(c, scope, 1024).empty()) << to_string(c);
    }
  }
}
