// --model in isolate and preflight: the floor is the model's prediction for
// the test's shape less the tolerance, its message names the model, and a
// model that cannot predict the shape or a bad option is a usage error.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "isolate/verdict.h"
#include "shared/model_floor.h"
#include "smddp/error.h"

namespace smddp::diag {
namespace {

// A synthetic model file; network_data false: nothing determined there.
std::string write_model(const std::string& name, double beta, bool network_data = true) {
  auto tier = [&](bool data) {
    nlohmann::json undetermined = nlohmann::json::object();
    if (!data) {
      for (const char* p : {"alpha_us", "beta_us_per_byte", "gamma_us_per_byte", "overhead_us"}) undetermined[p] = "no data";
    }
    return nlohmann::json{{"alpha_us", 1.0}, {"beta_us_per_byte", beta}, {"gamma_us_per_byte", 0.0}, {"overhead_us", 0.0},
                          {"bandwidth_gbps", 1e-3 / beta}, {"undetermined", undetermined}};
  };
  const nlohmann::json doc = {{"format", "smddp-model"}, {"version", 1}, {"equation", "synthetic"},
                              {"tiers", {{"shm", tier(true)}, {"network", tier(network_data)}}},
                              {"schedule", {{"shm_slot_bytes", 1048576}, {"dedicated_cores", true}, {"cma", true}}},
                              {"fit", nlohmann::json::object()}};
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << doc.dump();
  return path;
}

TEST(ModelFloor, IsThePredictionLessTheTolerance) {
  const auto m = load_model_option(write_model("floor.json", 1e-3), 20);
  const ModelFloor f = model_allreduce_floor(m, "ring", 2, 1, 1 << 20);
  results::ResultRow row;
  row.collective = "allreduce";
  row.dtype = "float32";
  row.algorithm = "ring";
  row.bytes = 1 << 20;
  row.hosts = 2;
  row.ranks = 2;
  const results::RowPrediction p = results::predict_row(m.model, row);
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_DOUBLE_EQ(f.predicted_gbs, p.busbw_gbps);
  EXPECT_DOUBLE_EQ(f.floor_gbs, 0.8 * p.busbw_gbps);
  EXPECT_NE(f.by.find("model " + m.origin + ": ring predicts"), std::string::npos) << f.by;
  EXPECT_NE(f.by.find("2 hosts x 1 rank, 1 MiB, less 20 %"), std::string::npos) << f.by;
  // A slower network tier predicts less.
  const auto slow = load_model_option(write_model("slow.json", 1e-2), 20);
  EXPECT_LT(model_allreduce_floor(slow, "ring", 2, 1, 1 << 20).predicted_gbs, f.predicted_gbs);
}

TEST(ModelFloor, BadOptionsAndShapesAreUsageErrors) {
  const std::string good = write_model("good.json", 1e-3);
  EXPECT_THROW(load_model_option(good, 100), UsageError);
  EXPECT_THROW(load_model_option(good, -1), UsageError);
  EXPECT_THROW(load_model_option(::testing::TempDir() + "none.json", 25), UsageError);
  const auto blind = load_model_option(write_model("blind.json", 1e-3, false), 25);
  try {
    model_allreduce_floor(blind, "ring", 2, 1, 1 << 20);
    FAIL() << "no network data, yet a prediction";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("no data for the network tier"), std::string::npos) << e.what();
  }
}

TEST(ModelFloor, IsolateNamesTheModelInTheReason) {
  IsolateLimits l;
  l.min_busbw_gbs = 10;
  l.busbw_floor_by = "model m.json: ring predicts 12.500 GB/s";
  Isolation iso({"h0", "h1"}, l);
  auto tests = iso.next_round();
  ASSERT_EQ(tests.size(), 1u);
  tests[0].busbw_gbs = 5;
  tests[0].stream_gbs = 5;
  iso.record(tests, {});
  const auto v = iso.verdicts();
  ASSERT_TRUE(v[0].failed);
  ASSERT_FALSE(v[0].reasons.empty());
  EXPECT_NE(v[0].reasons[0].find("below the floor 10.000 GB/s (model m.json: ring predicts 12.500 GB/s)"), std::string::npos)
      << v[0].reasons[0];
}

TEST(ModelFloor, BisectionGroupsTakeTheirOwnShapesFloor) {
  IsolateLimits l;
  l.min_busbw_gbs = 1;  // pairs: 10 GB/s passes
  l.bisect_min_nodes = 4;
  l.group_busbw_floor = [](int nodes) -> std::optional<std::pair<double, std::string>> {
    if (nodes < 3) return std::nullopt;  // pairs keep the pair floor
    return std::make_pair(100.0, "model m.json: ring predicts 125.000 GB/s for " + std::to_string(nodes) + " hosts");
  };
  // 6 nodes: the group of 6 fails its floor, its halves of 3 theirs: named.
  Isolation iso({"h0", "h1", "h2", "h3", "h4", "h5"}, l);
  bool group_seen = false;
  for (auto tests = iso.next_round(); !tests.empty(); tests = iso.next_round()) {
    for (auto& t : tests) {
      group_seen |= t.nodes.size() == 6;
      t.busbw_gbs = t.stream_gbs = 10;
    }
    iso.record(tests, {});
  }
  ASSERT_TRUE(group_seen);
  bool named = false;
  for (const auto& v : iso.verdicts()) {
    for (const auto& r : v.reasons) named |= r.find("below the floor 100.000 GB/s (model m.json: ring predicts 125.000 GB/s for 3 hosts)") != std::string::npos;
  }
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace smddp::diag
