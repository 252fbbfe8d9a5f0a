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

// Counts that would be cast to int (a false rank count, an overflowed
// product) are refused, naming the bound.
TEST(Rows, AbsurdCountsAreRefusedNamingTheBound) {
  const auto refused = [](const nlohmann::json& doc) {
    try {
      read_result_rows(doc, "c.json");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  for (const nlohmann::json& v : {nlohmann::json(1e12), nlohmann::json(uint64_t{1} << 40), nlohmann::json(-1),
                                  nlohmann::json(2.5), nlohmann::json("4")}) {
    auto doc = bench_doc();
    doc["nranks"] = v;
    EXPECT_NE(refused(doc).find("`nranks` must be an integer 0..1048576"), std::string::npos) << v;
  }
  auto row_hosts = bench_doc();
  row_hosts["rows"][0]["hosts"] = 1e10;
  EXPECT_NE(refused(row_hosts).find("`hosts` must be an integer"), std::string::npos);
  auto at_bound = bench_doc();
  at_bound["nranks"] = kMaxRanks;
  EXPECT_EQ(read_result_rows(at_bound, "c.json")[0].ranks, kMaxRanks);
  // nthreads x ngpus x devices: each in range, the product not.
  auto product = nccl_tests_doc();
  product["config"]["nthreads"] = 1 << 20;
  product["config"]["ngpus"] = 1 << 20;
  EXPECT_NE(refused(product).find("more than 1048576 ranks"), std::string::npos);
  // A row number that is not a small integer only labels: numbered by its place.
  auto label = bench_doc();
  label["rows"][0]["row"] = 1e300;
  EXPECT_EQ(read_result_rows(label, "c.json")[0].index, 0);
}

// Rows of other suites' collectives (nccl-tests' hypercube_perf) and names
// newer writers use are read, not refused: nothing in this file is ours to
// correct, and a baseline or model simply judges no such row.
TEST(Rows, OtherSuitesNamesAreRead) {
  const nlohmann::json nccl = {{"args", {"./hypercube_perf"}}, {"results", {{{"size", 8}, {"type", "float"}, {"in_place", {{"bus_bw", 1.0}}}}}}};
  EXPECT_NO_THROW(read_result_rows(nccl, "r.json"));
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
