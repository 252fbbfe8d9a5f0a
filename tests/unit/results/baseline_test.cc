// The baseline library: both result formats read into the same rows, the
// most specific entry judges a row, the gate names rows below tolerance, and
// learning takes the median and MAD per row kind.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "baseline.h"
#include "smddp/error.h"

namespace smddp::bench {
namespace {

nlohmann::json bench_doc(double busbw) {
  return {{"nranks", 4}, {"nnodes", 2}, {"devices", {{"memory", "host"}}},
          {"rows", {{{"collective", "allreduce"}, {"dtype", "float32"}, {"backend", "smddp"}, {"placement", "in-place"},
                     {"bytes", 1048576}, {"busbw_gbps", busbw}}}}};
}

Baseline parse(const std::string& text) { return parse_baseline_section(YAML::Load(text)["baseline"], "t.yaml"); }

TEST(Baseline, ReadsSmddpBenchAndNcclTestsRows) {
  auto a = read_result_rows(bench_doc(2.5), "a.json");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].collective, "allreduce");
  EXPECT_EQ(a[0].ranks, 4);
  EXPECT_EQ(a[0].hosts, 2);
  EXPECT_EQ(a[0].memory, "host");
  nlohmann::json nccl = {{"devices", {{{"rank", 0}, {"hostname", "a"}}, {{"rank", 1}, {"hostname", "b"}}}},
                         {"results", {{{"size", 1048576}, {"type", "float"}, {"experiment_name", "all_reduce_perf"},
                                       {"out_of_place", {{"bus_bw", 30.0}}}, {"in_place", {{"bus_bw", 31.0}}}}}}};
  auto b = read_result_rows(nccl, "b.json");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].collective, "allreduce");
  EXPECT_EQ(b[0].dtype, "float");  // nccl-tests' name, the one the engine prints
  EXPECT_EQ(b[0].hosts, 2);
  EXPECT_EQ(b[1].busbw_gbps, 31.0);
  EXPECT_THROW(read_result_rows({{"tool", "x"}}, "c.json"), UsageError);
}

TEST(Baseline, MostSpecificEntryJudgesAndGateNamesRows) {
  Baseline b = parse(
      "baseline:\n  tolerance: 0.2\n  entries:\n"
      "    - {collective: allreduce, min_bytes: 1KiB, busbw_gbps: 1}\n"
      "    - {collective: allreduce, bytes: 1MiB, hosts: 2, busbw_gbps: 10, tolerance: 0.5}\n");
  auto rows = read_result_rows(bench_doc(6), "a.json");
  const BaselineEntry* e = match_entry(b, rows[0]);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->busbw_gbps, 10);
  EXPECT_TRUE(gate_rows(b, rows).failures.empty());  // 6 >= 10 * (1 - 0.5)
  rows = read_result_rows(bench_doc(4), "a.json");
  auto g = gate_rows(b, rows);
  ASSERT_EQ(g.failures.size(), 1u);
  EXPECT_NE(g.failures[0].text.find("busbw 4.000 GB/s below 5.000 GB/s"), std::string::npos) << g.failures[0].text;
  EXPECT_NE(g.failures[0].text.find("t.yaml:5"), std::string::npos) << g.failures[0].text;
}

TEST(Baseline, LearnsMedianAndSpreadAndReadsItBack) {
  std::vector<ResultRow> rows;
  for (double v : {1.0, 2.0, 10.0}) {
    auto r = read_result_rows(bench_doc(v), "a.json");
    rows.insert(rows.end(), r.begin(), r.end());
  }
  Baseline learned = learn_baseline(rows, 0.3);
  ASSERT_EQ(learned.entries.size(), 1u);
  EXPECT_EQ(learned.entries[0].busbw_gbps, 2.0);
  EXPECT_EQ(learned.entries[0].spread_gbps, 1.0);
  EXPECT_EQ(learned.entries[0].samples, 3);
  Baseline back = parse(baseline_to_yaml(learned, {"a.json"}));
  ASSERT_EQ(back.entries.size(), 1u);
  EXPECT_EQ(back.entries[0].min_bytes, 1048576u);
  EXPECT_EQ(back.entries[0].ranks, 4);
  EXPECT_DOUBLE_EQ(back.tolerance, 0.3);
}

TEST(Baseline, MalformedSectionsAreUsageErrors) {
  EXPECT_THROW(parse("baseline:\n  entries:\n    - {collective: allreduce}\n"), UsageError);
  EXPECT_THROW(parse("baseline:\n  entries:\n    - {collective: allreduce, busbw_gbps: 1, bytes: lots}\n"), UsageError);
  EXPECT_THROW(parse("baseline:\n  tolerance: 2\n  entries: []\n"), UsageError);
  EXPECT_THROW(parse("baseline:\n  entries:\n    - {collective: allreduce, busbw_gbps: 1, colour: red}\n"), UsageError);
}

}  // namespace
}  // namespace smddp::bench
