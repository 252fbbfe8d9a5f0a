// smddp-model's pieces: exact predictions of known schedules, a fit that
// recovers the parameters synthetic rows were made from (also with
// outliers), and a tuning file the selector's own parser reads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "algorithms/selector.h"
#include "smddp/error.h"
#include "verbs.h"
#include "fit.h"
#include "smddp/model/cost_model.h"

namespace smddp::model {
namespace {

Model known() {
  Model m;
  m.tier(Tier::Shm).value = {2.0, 1.0 / 4000, 1.0 / 8000, 3.0};         // 4 GB/s copies
  m.tier(Tier::Network).value = {30.0, 1.0 / 25, 1.0 / 9000, 12.0};       // 25 MB/s link
  for (auto& t : m.tiers) t.determined = {true, true, true, true};
  return m;
}

std::string temp_path(const std::string& name) {
  return testing::TempDir() + "/smddp_model_" + std::to_string(::getpid()) + "_" + name;
}

TEST(ModelPredict, RingAllreduceIsItsClosedForm) {
  const Model m = known();
  const uint64_t S = 1 << 20;
  const int n = 4;
  const auto s = schedule::make(Collective::AllReduce, "ring", {n, 1}, S, 4);
  const auto& net = m.tier(Tier::Network).value;
  const double expect = 2 * (n - 1) * (net[3] + net[0] + S / n * net[1]) + (n - 1) * (S / n) * net[2];
  EXPECT_DOUBLE_EQ(predict_us(m, s), expect);
}

TEST(ModelPredict, FlowsMultiplyTheNetworkBytes) {
  Model m;
  m.tier(Tier::Network).value = {0, 1.0, 0, 0};
  // Hierarchical on 2 hosts x 2 ranks, 8 MiB: the cross ring (1 step each
  // way of 2 MiB per rank), both ranks of a host on the link at once.
  const auto s = schedule::make(Collective::AllReduce, "hierarchical", {2, 2}, 8 << 20, 4);
  EXPECT_DOUBLE_EQ(predict_us(m, s), 2.0 * 2 * (2 << 20));
}

TEST(ModelPredict, BusBandwidthIsSmddpBenchs) {
  // allreduce 2(n-1)/n: 1 GB in 1 s on 4 ranks is 1.5 GB/s.
  EXPECT_DOUBLE_EQ(busbw_gbps(Collective::AllReduce, 4, 1000000000, 1e6), 1.5);
  EXPECT_DOUBLE_EQ(busbw_gbps(Collective::AllGather, 4, 1000000000, 1e6), 0.75);
}

std::vector<Row> synthetic(const Model& m) {
  std::vector<Row> rows;
  const schedule::Topology topos[] = {{1, 2}, {1, 4}, {2, 1}, {3, 1}, {4, 1}, {2, 2}, {4, 2}};
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter}) {
    for (const auto& t : topos) {
      for (const auto& name : schedule::algorithms(c)) {
        for (uint64_t b = 4096; b <= (64u << 20); b *= 4) {
          const auto s = schedule::make(c, name, t, b, 4);
          if (!s.declined.empty()) continue;
          Row r;
          r.file = "synthetic";
          r.row = static_cast<int>(rows.size());
          r.collective = c;
          r.algorithm = name;
          r.bytes = b;
          r.dtype_size = 4;
          r.hosts = t.hosts;
          r.ranks_per_host = t.ranks_per_host;
          r.time_us = predict_us(m, s);
          rows.push_back(r);
        }
      }
    }
  }
  return rows;
}

TEST(ModelFit, RecoversTheParametersOfSyntheticRows) {
  const Model truth = known();
  const auto rows = synthetic(truth);
  const FitResult f = fit(rows);
  EXPECT_EQ(f.residuals.size(), rows.size());
  for (int t = 0; t < kTiers; ++t) {
    for (int p = 0; p < kParams; ++p) {
      EXPECT_TRUE(f.model.tiers[t].determined[p]) << t << " " << p << " " << f.model.tiers[t].note[p];
      EXPECT_NEAR(f.model.tiers[t].value[p], truth.tiers[t].value[p], 1e-6 * truth.tiers[t].value[p]) << t << " " << p;
    }
  }
  EXPECT_LT(median_abs_error(f.residuals), 1e-6);
}

TEST(ModelFit, OutliersDoNotPullTheFit) {
  const Model truth = known();
  auto rows = synthetic(truth);
  // A few rows disturbed by a noisy neighbour: 3x slower.
  for (size_t i = 5; i < rows.size(); i += rows.size() / 6) rows[i].time_us *= 3;
  const FitResult f = fit(rows);
  for (int t = 0; t < kTiers; ++t) {
    for (int p : {0, 1}) {  // latency and bandwidth
      EXPECT_NEAR(f.model.tiers[t].value[p], truth.tiers[t].value[p], 0.02 * truth.tiers[t].value[p]) << t << " " << p;
    }
  }
  int outliers = 0;
  for (const auto& r : f.residuals) outliers += r.weight < 0.5;
  EXPECT_GE(outliers, 5);
}

TEST(ModelFit, SaysWhatTheRowsCannotDetermine) {
  // Ring allreduce on one rank per host: no shared memory; alpha and the
  // overhead (one message per step) and gamma and beta (reduce half of
  // what is sent) are proportional.
  const Model truth = known();
  std::vector<Row> rows;
  for (const Row& r : synthetic(truth)) {
    if (r.collective == Collective::AllReduce && r.algorithm == "ring" && r.ranks_per_host == 1) rows.push_back(r);
  }
  ASSERT_FALSE(rows.empty());
  const FitResult f = fit(rows);
  EXPECT_FALSE(f.model.tier(Tier::Shm).any_data());
  EXPECT_EQ(f.model.tier(Tier::Shm).note[1], "no data");
  const auto& net = f.model.tier(Tier::Network);
  EXPECT_TRUE(net.determined[1]);
  EXPECT_TRUE(net.determined[0]);
  EXPECT_FALSE(net.determined[3]);
  EXPECT_NE(net.note[3].find("network.alpha_us"), std::string::npos) << net.note[3];
  EXPECT_FALSE(net.determined[2]);
  EXPECT_LT(median_abs_error(f.residuals), 1e-6);  // still predicts its own rows
}

TEST(ModelFile, RoundTripsAndRejectsJunk) {
  Model m = known();
  m.tier(Tier::Shm).determined[2] = false;
  m.tier(Tier::Shm).note[2] = "no data";
  const Model back = from_json(to_json(m), "test");
  for (int t = 0; t < kTiers; ++t) {
    EXPECT_EQ(back.tiers[t].value, m.tiers[t].value);
    EXPECT_EQ(back.tiers[t].determined, m.tiers[t].determined);
  }
  EXPECT_THROW(from_json(nlohmann::json::object(), "x"), UsageError);
  auto j = to_json(m);
  j["tiers"]["network"]["beta_us_per_byte"] = -1;
  EXPECT_THROW(from_json(j, "x"), UsageError);
  j = to_json(m);
  j["version"] = 2;
  EXPECT_THROW(from_json(j, "x"), UsageError);
}

// Misspelled names are refused, not ignored with a default in their place;
// values of the wrong type are UsageErrors, not the JSON library's exceptions.
TEST(ModelFile, UnknownKeysAndWrongTypesAreUsageErrors) {
  Model m;
  auto refusal = [](const nlohmann::json& j) -> std::string {
    try {
      from_json(j, "m.json");
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  };
  const nlohmann::json good = to_json(m);
  EXPECT_EQ(refusal(good), "");
  auto j = good;
  j["tiers"]["nvlink"] = j["tiers"]["shm"];
  EXPECT_EQ(refusal(j), "m.json: unknown key 'nvlink' in tiers; valid: shm, network");
  j = good;
  j["tiers"]["shm"]["undetermined"] = {{"alpah_us", "no data"}};
  EXPECT_NE(refusal(j).find("unknown key 'alpah_us' in tiers.shm.undetermined"), std::string::npos) << refusal(j);
  j = good;
  j["schedule"]["shm_slot_byte"] = 4096;
  EXPECT_NE(refusal(j).find("unknown key 'shm_slot_byte' in schedule"), std::string::npos) << refusal(j);
  j = good;
  j["colour"] = "red";
  EXPECT_NE(refusal(j).find("unknown key 'colour' in the document"), std::string::npos) << refusal(j);
  for (auto [key, value] : {std::pair<const char*, nlohmann::json>{"version", "1"}, {"format", 7}}) {
    j = good;
    j[key] = value;
    EXPECT_NE(refusal(j), "") << key;
  }
  j = good;
  j["schedule"]["shm_slot_bytes"] = 1;  // a schedule of a million steps per MiB
  EXPECT_NE(refusal(j).find("SMDDP_SHM_SLOT_BYTES"), std::string::npos) << refusal(j);
  j = good;
  j["schedule"]["cma"] = "yes";
  EXPECT_NE(refusal(j).find("schedule.cma must be true or false"), std::string::npos) << refusal(j);
}

// fit and check read result files through smddp::results' reader and keep
// smddp's out-of-place rows of known algorithms with a time.
TEST(ModelRows, KeepsWhatTheScheduleCanPredict) {
  auto row = [](int i, const char* backend, const char* algorithm, const char* placement) {
    return nlohmann::json{{"row", i},           {"collective", "allreduce"}, {"dtype", "float"}, {"bytes", 4096},
                          {"backend", backend}, {"algorithm", algorithm},    {"placement", placement},
                          {"time_us", 20.0},    {"busbw_gbps", 1.0},         {"wrong", 0}};
  };
  nlohmann::json doc = {{"nranks", 4}, {"nnodes", 2},
                        {"rows", {row(0, "smddp", "ring", "out-of-place"), row(1, "smddp", "ring", "in-place"),
                                  row(2, "mpi", "mpi:default", "out-of-place"), row(3, "smddp", "no_such", "out-of-place"),
                                  row(4, "smddp", "ring", "out-of-place"), row(5, "smddp", "ring", "out-of-place")}}};
  doc["rows"][4]["wrong"] = 3;
  doc["rows"][5]["per_iteration"] = {{"p50_us", 15.0}};
  const std::string path = temp_path("rows.json");
  std::ofstream(path) << doc.dump();
  const Loaded l = load_results({path}, {});
  ASSERT_EQ(l.rows.size(), 2u);
  EXPECT_EQ(l.skipped, 4);  // in place, mpi, unknown algorithm, wrong values
  EXPECT_EQ(l.rows[0].row, 0);
  EXPECT_EQ(l.rows[0].hosts, 2);
  EXPECT_EQ(l.rows[0].ranks_per_host, 2);
  EXPECT_EQ(l.rows[0].dtype_size, 4u);
  EXPECT_EQ(l.rows[0].time_us, 20.0);
  EXPECT_EQ(l.rows[1].time_us, 15.0);  // the per-iteration median where there is one
  // Hosts with different rank counts have no one shape.
  doc["ranks"] = {{{"rank", 0}, {"node", 0}}, {{"rank", 1}, {"node", 0}}, {{"rank", 2}, {"node", 0}}, {{"rank", 3}, {"node", 1}}};
  std::ofstream(path) << doc.dump();
  EXPECT_THROW(load_results({path}, {}), UsageError);
  std::remove(path.c_str());
}

void write_model(const std::string& path) {
  std::ofstream(path) << to_json(known()).dump();
}

TEST(ModelTuningFile, TheSelectorParsesWhatPredictWrites) {
  const std::string mpath = temp_path("model.json"), tpath = temp_path("tuning.txt");
  write_model(mpath);
  PredictOptions o;
  o.model = mpath;
  o.hosts = 4;
  o.ranks_per_host = 2;
  o.collectives = {"allreduce", "allgather"};
  o.min_bytes = 1024;
  o.max_bytes = 256 << 20;
  o.factor = 2;
  o.tuning_file = tpath;
  std::ostringstream out;
  ASSERT_EQ(run_predict(o, out), 0);
  std::ifstream in(tpath);
  std::stringstream text;
  text << in.rdbuf();
  const auto rules = parse_tuning(text.str(), tpath);
  ASSERT_GE(rules.size(), 2u);
  bool inf_allreduce = false;
  for (const auto& r : rules) {
    EXPECT_EQ(r.scope, Scope::MultiNode);
    inf_allreduce |= r.collective == Collective::AllReduce && r.max_bytes == SIZE_MAX;
  }
  EXPECT_TRUE(inf_allreduce);
  EXPECT_NO_THROW(Selector{rules});
  // The crossovers printed are the rule boundaries written.
  EXPECT_NE(out.str().find("crossovers allreduce:"), std::string::npos);
  std::remove(mpath.c_str());
  std::remove(tpath.c_str());
}

TEST(ModelPredict, TheBestAlgorithmIsTheFastestPredicted) {
  const std::string mpath = temp_path("model2.json");
  write_model(mpath);
  PredictOptions o;
  o.model = mpath;
  o.hosts = 2;
  o.ranks_per_host = 1;
  o.min_bytes = o.max_bytes = 1 << 20;
  o.json = true;
  std::ostringstream out;
  ASSERT_EQ(run_predict(o, out), 0);
  const auto j = nlohmann::json::parse(out.str());
  const auto& size = j["collectives"][0]["sizes"][0];
  double best = 1e300;
  std::string name;
  for (const auto& p : size["predictions"]) {
    if (p["time_us"].get<double>() < best) best = p["time_us"], name = p["algorithm"];
  }
  EXPECT_EQ(size["best"], name);
  // ring on 2 hosts: its exact closed form.
  const Model m = known();
  const auto& net = m.tier(Tier::Network).value;
  const double S = 1 << 20;
  for (const auto& p : size["predictions"]) {
    if (p["algorithm"] == "ring") {
      EXPECT_DOUBLE_EQ(p["time_us"].get<double>(), 2 * (net[3] + net[0] + S / 2 * net[1]) + S / 2 * net[2]);
    }
  }
  std::remove(mpath.c_str());
}

}  // namespace
}  // namespace smddp::model
