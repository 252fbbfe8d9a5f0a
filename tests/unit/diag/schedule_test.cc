// Pair schedules: every pair exactly once, pairs in a round disjoint.
#include <gtest/gtest.h>

#include <set>

#include "fabric/schedule.h"

namespace smddp::diag {
namespace {

TEST(Schedule, AllPairsOnceInDisjointRounds) {
  for (int n = 0; n <= 17; ++n) {
    auto rounds = all_pairs_schedule(n);
    std::set<RankPair> seen;
    for (const auto& round : rounds) {
      std::set<int> busy;
      for (const auto& [a, b] : round) {
        ASSERT_LT(a, b) << "n=" << n;
        ASSERT_GE(a, 0);
        ASSERT_LT(b, n);
        EXPECT_TRUE(busy.insert(a).second) << "rank " << a << " twice in a round, n=" << n;
        EXPECT_TRUE(busy.insert(b).second) << "rank " << b << " twice in a round, n=" << n;
        EXPECT_TRUE(seen.insert({a, b}).second) << "pair repeated, n=" << n;
      }
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(n * (n - 1) / 2)) << "n=" << n;
    if (n >= 2) {
      EXPECT_EQ(rounds.size(), static_cast<size_t>(n % 2 == 0 ? n - 1 : n)) << "n=" << n;
    }
  }
}

TEST(Schedule, ThreeRanksRestOneRankPerRound) {
  auto rounds = all_pairs_schedule(3);
  ASSERT_EQ(rounds.size(), 3u);
  for (const auto& r : rounds) EXPECT_EQ(r.size(), 1u);
}

TEST(Schedule, SampledRoundsKeepEveryRankBusy) {
  auto rounds = sampled_schedule(64, 8);
  ASSERT_EQ(rounds.size(), 8u);
  std::set<RankPair> seen;
  for (const auto& round : rounds) {
    EXPECT_EQ(round.size(), 32u);
    std::set<int> busy;
    for (const auto& [a, b] : round) {
      busy.insert(a);
      busy.insert(b);
      EXPECT_TRUE(seen.insert({a, b}).second);
    }
    EXPECT_EQ(busy.size(), 64u);
  }
  // Fewer rounds than asked for when the full schedule is shorter.
  EXPECT_EQ(sampled_schedule(5, 8).size(), 5u);
  EXPECT_EQ(sampled_schedule(1, 8).size(), 0u);
}

}  // namespace
}  // namespace smddp::diag
