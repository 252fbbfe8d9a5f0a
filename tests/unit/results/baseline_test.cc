// The baseline format and gate: the most specific entry judges a row, the
// gate names rows below tolerance, learning takes the median and MAD per row
// kind, and rows without a bus bandwidth are neither judged nor learned.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "smddp/error.h"
#include "smddp/results/baseline.h"

namespace smddp::results {
namespace {

nlohmann::json bench_doc(double busbw) {
  return {{"nranks", 4}, {"nnodes", 2}, {"devices", {{"memory", "host"}}},
          {"rows", {{{"collective", "allreduce"}, {"dtype", "float32"}, {"backend", "smddp"}, {"placement", "in-place"},
                     {"bytes", 1048576}, {"busbw_gbps", busbw}}}}};
}

Baseline parse(const std::string& text) { return parse_baseline_section(YAML::Load(text)["baseline"], "t.yaml"); }

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

TEST(Baseline, RowsWithoutABusBandwidthAreNeitherJudgedNorLearned) {
  Baseline b = parse("baseline:\n  entries:\n    - {collective: allreduce, busbw_gbps: 10}\n");
  auto rows = read_result_rows(bench_doc(1), "a.json");
  rows.push_back(rows[0]);
  rows.back().busbw_gbps.reset();
  const GateResult g = gate_rows(b, rows);
  EXPECT_EQ(g.judged, 1);
  EXPECT_EQ(g.failures.size(), 1u);
  EXPECT_FALSE(judge_row(rows.back(), 10, 0.25, "x"));
  const Baseline learned = learn_baseline(rows, 0.25);
  ASSERT_EQ(learned.entries.size(), 1u);
  EXPECT_EQ(learned.entries[0].samples, 1);
}

TEST(Baseline, MalformedSectionsAreUsageErrors) {
  EXPECT_THROW(parse("baseline:\n  entries:\n    - {collective: allreduce}\n"), UsageError);
  EXPECT_THROW(parse("baseline:\n  entries:\n    - {collective: allreduce, busbw_gbps: 1, bytes: lots}\n"), UsageError);
  EXPECT_THROW(parse("baseline:\n  tolerance: 2\n  entries: []\n"), UsageError);
  EXPECT_THROW(parse("baseline:\n  entries:\n    - {collective: allreduce, busbw_gbps: 1, colour: red}\n"), UsageError);
}

std::string refusal(const std::string& text) {
  try {
    parse(text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// A misspelled name would match no row: the gate would judge nothing and pass.
TEST(Baseline, NamesAreTheEnginesOrTheFileIsRefused) {
  const std::string head = "baseline:\n  entries:\n    - {collective: allreduce, busbw_gbps: 1}\n";
  std::string why = refusal(head + "    - {collective: allreduc, busbw_gbps: 1}\n");
  EXPECT_NE(why.find("entry 2: unknown collective 'allreduc'; valid: allreduce, allgather"), std::string::npos) << why;
  EXPECT_NE(why.find("t.yaml"), std::string::npos) << why;
  why = refusal(head + "    - {collective: allreduce, dtype: flaot, busbw_gbps: 1}\n");
  EXPECT_NE(why.find("entry 2: unknown dtype 'flaot'; valid: int8"), std::string::npos) << why;
  why = refusal(head + "    - {collective: allreduce, backend: ncll, busbw_gbps: 1}\n");
  EXPECT_NE(why.find("entry 2: unknown backend 'ncll'; valid: smddp, mpi"), std::string::npos) << why;
  why = refusal(head + "    - {collective: allreduce, memory: gpu, busbw_gbps: 1}\n");
  EXPECT_NE(why.find("entry 2: unknown memory 'gpu'; valid: host, cuda"), std::string::npos) << why;
  EXPECT_NE(refusal(head + "    - {collective: allreduce, ranks: 1e300, busbw_gbps: 1}\n").find("whole number"),
            std::string::npos);
  // Every spelling the tools accept, kept as the engine prints it.
  const Baseline b = parse(head + "    - {collective: reduce_scatter_perf, dtype: fp16, backend: mpi:ring, memory: cuda, "
                                  "busbw_gbps: 1}\n");
  EXPECT_EQ(b.entries[1].collective, "reducescatter");
  EXPECT_EQ(b.entries[1].dtype, "half");
}

TEST(Baseline, CouldJudgeAnyComparesTheRunsNames) {
  const Baseline b = parse("baseline:\n  entries:\n    - {collective: allreduce, backend: nccl, memory: cuda, busbw_gbps: 1}\n"
                           "    - {collective: broadcast, dtype: half, busbw_gbps: 1}\n");
  EXPECT_TRUE(could_judge_any(b, {"allreduce"}, {"float"}, {"smddp", "nccl"}, "cuda"));
  EXPECT_FALSE(could_judge_any(b, {"allreduce"}, {"float"}, {"smddp"}, "cuda"));
  EXPECT_FALSE(could_judge_any(b, {"allreduce"}, {"float"}, {"nccl"}, "host"));
  EXPECT_TRUE(could_judge_any(b, {"broadcast"}, {"half"}, {"mpi"}, "host"));
  EXPECT_FALSE(could_judge_any(b, {"broadcast", "allgather"}, {"float"}, {"mpi"}, "host"));
}

}  // namespace
}  // namespace smddp::results
