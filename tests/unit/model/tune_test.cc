// smddp-model tune's planning: the sizes and iterations it picks stay within
// the budget they are given, and the probe's pairs at its sizes determine
// the tiers a topology has (synthetic rows from a known model, as fit's own
// tests make them).
#include <gtest/gtest.h>

#include "fit.h"
#include "smddp/model/cost_model.h"
#include "tune.h"

namespace smddp::model {
namespace {

TEST(TunePlan, SizesFitTheirShareAndSpanLatencyToBandwidth) {
  for (double us_per_byte : {1e-5, 1e-4, 1e-3, 4e-2}) {
    for (double share : {1e5, 1e6, 2e7}) {
      const int calls = 13 * 5;
      const auto sizes = tune::plan_sizes(us_per_byte, share, calls, 64 << 20);
      ASSERT_GE(sizes.size(), 2u);
      EXPECT_EQ(sizes[0], tune::kMinBytes);
      double cost = 0;
      for (size_t i = 0; i < sizes.size(); ++i) {
        if (i > 0) {
          EXPECT_EQ(sizes[i], sizes[i - 1] * 4);
        }
        EXPECT_LE(sizes[i], uint64_t{64} << 20);
        cost += us_per_byte * calls * static_cast<double>(sizes[i]);
      }
      // Beyond the two sizes it always keeps, every size fits the share.
      if (sizes.size() > 2) {
        EXPECT_LE(cost, share) << us_per_byte << " " << share;
      }
      // And it stops only where the next size would not fit (or at the cap).
      if (sizes.back() * 4 <= uint64_t{64} << 20) {
        EXPECT_GT(cost + us_per_byte * calls * static_cast<double>(sizes.back() * 4) * 4.0 / 3.0, share * 0.99);
      }
    }
  }
  EXPECT_EQ(tune::plan_sizes(1e-9, 1e12, 1, 1 << 20).back(), uint64_t{1} << 20);
}

TEST(TunePlan, IterationsNeverPassTheDeadline) {
  for (double call : {0.5, 10.0, 1e3, 1e5, 3e6}) {
    for (double remaining : {0.0, 1e3, 1e5, 1e6, 3e7}) {
      for (int left : {1, 10, 500}) {
        const int n = tune::plan_iterations(call, remaining, left);
        EXPECT_LE(n, tune::kMaxIterations);
        EXPECT_GE(n, 0);
        EXPECT_LE(n * 1.5 * std::max(call, 1.0), remaining) << call << " " << remaining << " " << left;
      }
    }
  }
  EXPECT_EQ(tune::plan_iterations(10, 1e9, 1), tune::kMaxIterations);
  EXPECT_EQ(tune::plan_iterations(1e3, 1e5, 1000), tune::kMinIterations);  // a small share still gets a median
  EXPECT_EQ(tune::plan_iterations(1e6, 1e6, 1), 0);                       // not one call fits
}

TEST(TunePlan, CallSizesAreWholeElementsPerRank) {
  auto cs = tune::call_size(Collective::AllGather, 4096, 3, 4);
  EXPECT_EQ(cs.count, 341u);
  EXPECT_EQ(cs.row_bytes, 341u * 4 * 3);
  cs = tune::call_size(Collective::ReduceScatter, 4096, 4, 4);
  EXPECT_EQ(cs.count, 256u);
  EXPECT_EQ(cs.row_bytes, 4096u);
  cs = tune::call_size(Collective::AllReduce, 4096, 3, 4);
  EXPECT_EQ(cs.count, 1024u);
  EXPECT_EQ(cs.row_bytes, 4096u);
  EXPECT_EQ(tune::call_size(Collective::AllGather, 8, 4, 4).count, 0u);
}

// Rows the probe would time on a topology, with the times a known model gives.
std::vector<Row> probe_rows(const Model& m, int hosts, int per_host) {
  std::vector<Row> rows;
  for (uint64_t bytes : tune::plan_sizes(1e-4, 1e7, 1, 16 << 20)) {
    for (const auto& p : tune::probe_pairs()) {
      const auto cs = tune::call_size(p.collective, bytes, hosts * per_host, 4);
      const auto s = schedule::make(p.collective, p.algorithm, {hosts, per_host}, cs.row_bytes, 4);
      if (!s.declined.empty()) continue;
      Row r;
      r.collective = p.collective;
      r.algorithm = p.algorithm;
      r.bytes = cs.row_bytes;
      r.dtype_size = 4;
      r.hosts = hosts;
      r.ranks_per_host = per_host;
      r.time_us = predict_us(m, s);
      rows.push_back(r);
    }
  }
  return rows;
}

TEST(TuneProbe, DeterminesTheTiersItsTopologyHas) {
  Model m;
  m.tier(Tier::Shm).value = {2.0, 1.0 / 4000, 1.0 / 8000, 3.0};
  m.tier(Tier::Network).value = {30.0, 1.0 / 25, 1.0 / 9000, 12.0};
  // One host: the shm tier's bandwidth and reduction, no network data.
  FitResult one = fit(probe_rows(m, 1, 2));
  EXPECT_TRUE(one.model.tier(Tier::Shm).determined[1]);
  EXPECT_TRUE(one.model.tier(Tier::Shm).determined[2]);
  EXPECT_NEAR(one.model.tier(Tier::Shm).value[1], 1.0 / 4000, 1.0 / 4000 * 0.05);
  EXPECT_FALSE(one.model.tier(Tier::Network).any_data());
  // Two hosts x two ranks: both tiers' bandwidths.
  FitResult two = fit(probe_rows(m, 2, 2));
  EXPECT_TRUE(two.model.tier(Tier::Shm).determined[1]);
  EXPECT_TRUE(two.model.tier(Tier::Network).determined[1]);
  EXPECT_NEAR(two.model.tier(Tier::Network).value[1], 1.0 / 25, 1.0 / 25 * 0.05);
  EXPECT_LT(median_abs_error(two.residuals), 1.0);
}

}  // namespace
}  // namespace smddp::model
