// smddp/results/model_baseline.h: a row's prediction through its schedule,
// the reasons for none, and the --baseline gate's wording shared with the
// YAML gate.
#include <gtest/gtest.h>

#include <cstdio>

#include "smddp/results/model_baseline.h"
#include "smddp/schedule.h"
#include "smddp/traits.h"

namespace smddp::results {
namespace {

model::Model shm_model() {
  model::Model m;
  m.tier(model::Tier::Shm).value = {2.0, 0.001, 0.0005, 1.0};
  m.tier(model::Tier::Shm).determined = {true, true, true, true};
  for (auto& n : m.tier(model::Tier::Network).note) n = "no data";  // undetermined, as a 1-host fit leaves it
  return m;
}

ResultRow row(std::string algorithm, int ranks = 2, int hosts = 1) {
  ResultRow r;
  r.collective = "allreduce";
  r.dtype = "float32";
  r.backend = "smddp";
  r.bytes = 1 << 20;
  r.ranks = ranks;
  r.hosts = hosts;
  r.algorithm = std::move(algorithm);
  r.placement = "out-of-place";
  return r;
}

TEST(ModelBaseline, PredictsTheScheduleOfTheAlgorithmThatRan) {
  const auto m = shm_model();
  for (const std::string& name : schedule::algorithms(Collective::AllReduce)) {
    const auto s = schedule::make(Collective::AllReduce, name, {1, 2}, 1 << 20, 4, m.options);
    const RowPrediction p = predict_row(m, row(name));
    if (!s.declined.empty()) {
      EXPECT_FALSE(p.ok) << name;
      continue;
    }
    ASSERT_TRUE(p.ok) << name << ": " << p.error;
    EXPECT_DOUBLE_EQ(p.time_us, model::predict_us(m, s)) << name;
    EXPECT_DOUBLE_EQ(p.busbw_gbps, (1 << 20) / (p.time_us * 1e3) * traits(Collective::AllReduce).bus_factor(2));
  }
}

TEST(ModelBaseline, EmptyAlgorithmIsTheDefaultSelectorsChoice) {
  const auto m = shm_model();
  const auto s = schedule::make(Collective::AllReduce, "auto", {1, 2}, 1 << 20, 4, m.options);
  const RowPrediction p = predict_row(m, row(""));
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.algorithm, s.algorithm);
  EXPECT_DOUBLE_EQ(p.time_us, model::predict_us(m, s));
}

TEST(ModelBaseline, NoPredictionSaysWhy) {
  const auto m = shm_model();
  ResultRow mpi = row("ring");
  mpi.backend = "mpi:ring";
  EXPECT_NE(predict_row(m, mpi).error.find("backend mpi:ring"), std::string::npos);
  EXPECT_NE(predict_row(m, row("no_such_algorithm")).error.find("no schedule"), std::string::npos);
  EXPECT_NE(predict_row(m, row("", 3, 2)).error.find("uneven"), std::string::npos);
  ResultRow uneven = row("");
  uneven.uneven_hosts = true;
  EXPECT_NE(predict_row(m, uneven).error.find("uneven"), std::string::npos);
  EXPECT_NE(predict_row(m, row("", 4, 2)).error.find("network tier"), std::string::npos);
}

TEST(ModelBaseline, GateUsesTheYamlGatesWording) {
  ModelBaseline b{"m.json", shm_model(), 0.25};
  ResultRow slow = row(""), fast = row(""), mpi = row("");
  const RowPrediction p = predict_row(b.model, slow);
  ASSERT_TRUE(p.ok);
  slow.busbw_gbps = p.busbw_gbps * 0.5;
  fast.busbw_gbps = p.busbw_gbps * 0.8;
  mpi.busbw_gbps = p.busbw_gbps;
  mpi.backend = "mpi";
  const ModelGateResult g = gate_rows(b, {slow, fast, mpi});
  EXPECT_EQ(g.judged, 2);
  ASSERT_EQ(g.failures.size(), 1u);
  EXPECT_NE(g.failures[0].text.find("below"), std::string::npos);
  EXPECT_NE(g.failures[0].text.find("less 25 %, m.json: " + p.algorithm + " predicted"), std::string::npos);
  ASSERT_EQ(g.unpredicted.size(), 1u);
  char where[128];
  std::snprintf(where, sizeof where, "m.json: %s predicted %.2f us", p.algorithm.c_str(), p.time_us);
  const auto same = judge_row(slow, p.busbw_gbps, 0.25, where);
  ASSERT_TRUE(same);
  EXPECT_EQ(g.failures[0].text, same->text);
}

TEST(ModelBaseline, RowsWithoutABusBandwidthAreNotJudged) {
  ModelBaseline b{"m.json", shm_model(), 0.25};
  ResultRow slow = row(""), unmeasured = row("");
  slow.busbw_gbps = 1e-9;
  const ModelGateResult g = gate_rows(b, {slow, unmeasured});
  EXPECT_EQ(g.judged, 1);
  EXPECT_EQ(g.failures.size(), 1u);
  EXPECT_TRUE(g.unpredicted.empty());
}

TEST(ModelBaseline, MeasuredTimeIsTheMedianWhereThereIsOne) {
  ResultRow r = row("");
  EXPECT_FALSE(measured_time_us(r));
  r.time_us = 50;
  EXPECT_EQ(measured_time_us(r), 50);
  r.p50_us = 40;
  EXPECT_EQ(measured_time_us(r), 40);
}

TEST(ModelBaseline, DeviationIsSlowerThanPredictedPositive) {
  EXPECT_DOUBLE_EQ(deviation_pct(110, 100), 10);
  EXPECT_DOUBLE_EQ(deviation_pct(10, 100), -90);
}

}  // namespace
}  // namespace smddp::results
