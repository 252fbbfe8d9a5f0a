// The one reader of result files: smddp-bench's rows and nccl-tests 2.19's
// results (its real layout: devices under config, an empty experiment_name,
// the program in args[0]) as the same schema, and malformed documents as
// usage errors.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <unistd.h>

#include "smddp/error.h"
#include "smddp/results/rows.h"

namespace smddp::results {
namespace {

nlohmann::json bench_doc() {
  return {{"tool", "smddp-bench"}, {"nranks", 4}, {"nnodes", 2}, {"devices", {{"memory", "host"}}},
          {"ranks", {{{"rank", 0}, {"node", 0}}, {{"rank", 1}, {"node", 0}}, {{"rank", 2}, {"node", 1}}, {{"rank", 3}, {"node", 1}}}},
          {"rows",
           {{{"row", 7}, {"collective", "reduce_scatter"}, {"dtype", "float32"}, {"backend", "smddp"}, {"algorithm", "ring"},
             {"placement", "out-of-place"}, {"bytes", 1048576}, {"time_us", 120.5}, {"busbw_gbps", 2.5}, {"wrong", 0},
             {"per_iteration", {{"p50_us", 110.0}}}},
            {{"row", 8}, {"collective", "allreduce"}, {"dtype", "half"}, {"backend", "mpi"}, {"placement", "in-place"},
             {"bytes", 4096}, {"wrong", nullptr}}}}};
}

TEST(Rows, SmddpBenchRowsInTheEnginesNames) {
  const auto rows = read_result_rows(bench_doc(), "a.json");
  ASSERT_EQ(rows.size(), 2u);
  const ResultRow& r = rows[0];
  EXPECT_EQ(r.origin, "a.json");
  EXPECT_EQ(r.index, 7);
  EXPECT_EQ(r.collective, "reducescatter");
  EXPECT_EQ(r.dtype, "float");
  EXPECT_EQ(r.backend, "smddp");
  EXPECT_EQ(r.algorithm, "ring");
  EXPECT_EQ(r.memory, "host");
  EXPECT_EQ(r.placement, "out-of-place");
  EXPECT_EQ(r.bytes, 1048576u);
  EXPECT_EQ(r.ranks, 4);
  EXPECT_EQ(r.hosts, 2);
  EXPECT_FALSE(r.uneven_hosts);
  EXPECT_EQ(r.busbw_gbps, 2.5);
  EXPECT_EQ(r.time_us, 120.5);
  EXPECT_EQ(r.p50_us, 110.0);
  EXPECT_EQ(r.wrong, 0u);
  // A row that says less: absent, not zero.
  EXPECT_FALSE(rows[1].busbw_gbps);
  EXPECT_FALSE(rows[1].time_us);
  EXPECT_FALSE(rows[1].p50_us);
  EXPECT_FALSE(rows[1].wrong);
  EXPECT_EQ(rows[1].label(), "allreduce half 4096 B (mpi, in-place, 4 ranks, 2 hosts)");
}

TEST(Rows, HostsOfDifferentSizesAreMarked) {
  auto doc = bench_doc();
  doc["ranks"][1]["node"] = 1;
  EXPECT_TRUE(read_result_rows(doc, "a.json")[0].uneven_hosts);
}

// nccl-tests 2.19's -J document as its util.cu writes it.
nlohmann::json nccl_tests_doc() {
  return {{"version", 3},
          {"args", {"/opt/nccl-tests/build/all_reduce_perf", "-b", "1M", "-e", "1M", "-g", "2"}},
          {"config",
           {{"nthreads", 1}, {"ngpus", 2},
            {"devices", {{{"rank", 0}, {"hostname", "node-a"}}, {{"rank", 2}, {"hostname", "node-b"}}}}}},
          {"results",
           {{{"size", 1048576}, {"count", 262144}, {"type", "float"}, {"redop", "sum"}, {"root", "    -1"},
             {"out_of_place", {{"time", 52.0}, {"alg_bw", 20.1}, {"bus_bw", 30.2}, {"nwrong", 0.0}}},
             {"out_of_place_per_iter", {{"p50_us", 50.0}}},
             {"in_place", {{"time", 51.0}, {"alg_bw", 20.5}, {"bus_bw", 30.8}, {"nwrong", nullptr}}},
             {"actual_iterations", 20}, {"experiment_name", ""}},
            {{"size", 2097152}, {"type", "float"}, {"out_of_place", nullptr}, {"in_place", {{"cpu_time", 99.0}, {"bus_bw", 31.0}}},
             {"experiment_name", ""}}}}};
}

TEST(Rows, NcclTests219ResultsBothPlacements) {
  const auto rows = read_result_rows(nccl_tests_doc(), "n.json");
  ASSERT_EQ(rows.size(), 3u);  // the null out_of_place did not run
  const ResultRow& oop = rows[0];
  EXPECT_EQ(oop.collective, "allreduce");  // from args[0]: experiment_name is empty
  EXPECT_EQ(oop.dtype, "float");
  EXPECT_EQ(oop.backend, "nccl");
  EXPECT_EQ(oop.memory, "cuda");
  EXPECT_EQ(oop.placement, "out-of-place");
  EXPECT_EQ(oop.ranks, 4);  // 2 processes x 1 thread x 2 GPUs
  EXPECT_EQ(oop.hosts, 2);
  EXPECT_EQ(oop.busbw_gbps, 30.2);
  EXPECT_EQ(oop.time_us, 52.0);
  EXPECT_EQ(oop.p50_us, 50.0);
  EXPECT_EQ(oop.wrong, 0u);
  EXPECT_EQ(rows[1].placement, "in-place");
  EXPECT_EQ(rows[1].busbw_gbps, 30.8);
  EXPECT_FALSE(rows[1].p50_us);
  EXPECT_FALSE(rows[1].wrong);
  EXPECT_EQ(rows[2].bytes, 2097152u);
  EXPECT_EQ(rows[2].index, 1);
  EXPECT_EQ(rows[2].time_us, 99.0);  // -C 1: cpu_time
}

TEST(Rows, ExperimentNameOrOurCollectiveKeyNamesTheCollective) {
  auto doc = nccl_tests_doc();
  doc["results"][0]["experiment_name"] = "all_gather_perf";
  doc["results"][1]["collective"] = "reducescatter";
  doc.erase("args");
  const auto rows = read_result_rows(doc, "n.json");
  EXPECT_EQ(rows[0].collective, "allgather");
  EXPECT_EQ(rows[2].collective, "reducescatter");
}

TEST(Rows, MalformedDocumentsAreUsageErrors) {
  EXPECT_THROW(read_result_rows({{"tool", "x"}}, "c.json"), UsageError);
  EXPECT_THROW(read_result_rows(nlohmann::json::array(), "c.json"), UsageError);
  auto no_collective = bench_doc();
  no_collective["rows"][0].erase("collective");
  EXPECT_THROW(read_result_rows(no_collective, "c.json"), UsageError);
  auto negative = bench_doc();
  negative["rows"][0]["bytes"] = -1;
  EXPECT_THROW(read_result_rows(negative, "c.json"), UsageError);
  auto no_node = bench_doc();
  no_node["ranks"][0].erase("node");
  EXPECT_THROW(read_result_rows(no_node, "c.json"), UsageError);
  auto unnamed = nccl_tests_doc();
  unnamed.erase("args");
  EXPECT_THROW(read_result_rows(unnamed, "c.json"), UsageError);
}

// A row naming what no tool knows would match no baseline entry and
// predict nothing: the file is refused, naming the row and the name.
TEST(Rows, UnknownNamesAreUsageErrors) {
  auto refusal = [](const nlohmann::json& doc) -> std::string {
    try {
      read_result_rows(doc, "r.json");
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  };
  const nlohmann::json ok = {{"rows", {{{"row", 0}, {"collective", "allreduce"}, {"dtype", "float32"}, {"bytes", 8}}}}};
  EXPECT_EQ(refusal(ok), "");
  nlohmann::json bad = ok;
  bad["rows"][0]["collective"] = "allreduc";
  EXPECT_NE(refusal(bad).find("row 0: unknown collective 'allreduc'; valid: allreduce"), std::string::npos) << refusal(bad);
  bad = ok;
  bad["rows"][0]["backend"] = "ncll";
  EXPECT_NE(refusal(bad).find("unknown backend 'ncll'"), std::string::npos) << refusal(bad);
  const nlohmann::json nccl = {{"args", {"./hypercube_perf"}}, {"results", {{{"size", 8}, {"type", "float"}, {"in_place", {{"bus_bw", 1.0}}}}}}};
  EXPECT_NE(refusal(nccl).find("unknown collective 'hypercube_perf'"), std::string::npos) << refusal(nccl);
}

TEST(Rows, FilesThatCannotBeReadAreUsageErrors) {
  const std::string dir = ::testing::TempDir() + "/smddp_rows_" + std::to_string(::getpid());
  EXPECT_THROW(read_result_file(dir + "_missing.json"), UsageError);
  std::ofstream(dir + "_junk.json") << "{not json";
  EXPECT_THROW(read_result_file(dir + "_junk.json"), UsageError);
  std::ofstream(dir + "_good.json") << bench_doc().dump();
  EXPECT_EQ(read_result_file(dir + "_good.json").size(), 2u);
}

}  // namespace
}  // namespace smddp::results
