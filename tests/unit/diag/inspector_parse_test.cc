// NCCL Inspector readers (exporter/inspector_parse.h): both formats into
// our names, units and labels, and what hostile input does to them.
#include "exporter/inspector_parse.h"

#include <gtest/gtest.h>

#include <string>

namespace smddp::diag {
namespace {

const std::string kColl =
    R"({"header":{"id":"0xabc","comm_name":"DP Group 0","rank":2,"n_ranks":8,"nnodes":2},)"
    R"("metadata":{"inspector_output_format_version":"v4.0","dump_timestamp_us":1767600000500000,"hostname":"node-c","pid":9},)"
    R"("coll_perf":{"coll":"ReduceScatter","coll_sn":7,"coll_msg_size_bytes":6291456,"coll_exec_time_us":125,)"
    R"("coll_timing_source":"kernel_gpu","coll_algobw_gbs":50.331648,"coll_busbw_gbs":44.040192}})";

TEST(InspectorSize, BucketsAsThePluginDoes) {
  EXPECT_EQ(inspector_size_bucket(0), 0u);
  EXPECT_EQ(inspector_size_bucket(1000), 1000u);
  EXPECT_EQ(inspector_size_bucket(1024), 1024u);
  EXPECT_EQ(inspector_size_bucket(5000), 4096u);
  EXPECT_EQ(inspector_size_bucket(1048576), 1048576u);
  EXPECT_EQ(inspector_size_bucket(6291456 + 12345), 6291456u);
  EXPECT_EQ(inspector_size_bucket(uint64_t{5} << 40), uint64_t{5} << 40);
  EXPECT_EQ(inspector_size_bucket(uint64_t{3000} << 40), uint64_t{3000} << 40);  // TB is the largest unit
  EXPECT_EQ(*parse_inspector_size_range("4-5GB"), uint64_t{4} << 30);
  EXPECT_EQ(*parse_inspector_size_range("1000-1001KB"), 1000u * 1024);
  EXPECT_EQ(*parse_inspector_size_range("8-9B"), 8u);
  EXPECT_EQ(*parse_inspector_size_range("0B"), 0u);
  for (const char* bad : {"", "4GB", "4-6GB", "4-5PB", "x-5GB", "4-5", "-1-0GB", "18446744073709551615-0GB", "4-5GBx"}) {
    EXPECT_FALSE(parse_inspector_size_range(bad)) << bad;
  }
  // A range and the bucket of its lower end agree.
  EXPECT_EQ(*parse_inspector_size_range("6-7MB"), inspector_size_bucket(6291456 + 999));
}

TEST(InspectorJson, ACollectiveRecordUnderOurNames) {
  std::string why;
  auto r = parse_inspector_json_line(kColl, &why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->key.host, "node-c");
  EXPECT_EQ(r->key.comm, "DP Group 0");
  EXPECT_EQ(r->key.rank, "2");
  EXPECT_EQ(r->key.gpu, "none");
  EXPECT_EQ(r->key.job_id, "none");
  EXPECT_EQ(r->key.nranks, "8");
  EXPECT_EQ(r->key.nnodes, "2");
  EXPECT_EQ(r->key.collective, "reducescatter");
  EXPECT_EQ(r->key.size, "6291456");
  EXPECT_EQ(r->key.algorithm, "none");
  EXPECT_DOUBLE_EQ(*r->busbw, 44.040192e9);
  EXPECT_DOUBLE_EQ(*r->algbw, 50.331648e9);
  EXPECT_DOUBLE_EQ(*r->time, 125e-6);
  EXPECT_DOUBLE_EQ(r->timestamp, 1767600000.5);
}

TEST(InspectorJson, P2pRecordsAndUnnamedCommunicators) {
  const std::string line =
      R"({"header":{"id":"0xfeed","comm_name":"unknown","rank":1,"n_ranks":2,"nnodes":1},"metadata":{"hostname":"h"},)"
      R"("p2p_perf":{"p2p":"Recv","p2p_sn":1,"p2p_peer":0,"p2p_msg_size_bytes":300,"p2p_exec_time_us":3,"p2p_algobw_gbs":"nan","p2p_busbw_gbs":0.1}})";
  std::string why;
  auto r = parse_inspector_json_line(line, &why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->key.collective, "recv");
  EXPECT_EQ(r->key.comm, "0xfeed");
  EXPECT_EQ(r->key.size, "300");
  EXPECT_FALSE(r->algbw);  // the plugin's "nan": no value
  EXPECT_DOUBLE_EQ(*r->busbw, 0.1e9);
}

TEST(InspectorJson, HostileLinesAreRefusedWithAReason) {
  auto refused = [](const std::string& line) {
    std::string why;
    auto r = parse_inspector_json_line(line, &why);
    EXPECT_FALSE(r) << line;
    EXPECT_FALSE(why.empty()) << line;
    return why;
  };
  EXPECT_EQ(refused("not json"), "not a JSON object");
  EXPECT_EQ(refused("[1,2]"), "not a JSON object");
  EXPECT_EQ(refused(R"({"header":[1]})"), "no \"header\" or \"metadata\" object");
  std::string no_perf = kColl;
  no_perf.replace(no_perf.find("coll_perf"), 9, "else_perf");
  EXPECT_EQ(refused(no_perf), "no \"coll_perf\" or \"p2p_perf\" object");
  std::string neg = kColl;
  neg.replace(neg.find("6291456"), 7, "-1");
  EXPECT_EQ(refused(neg), "\"coll_msg_size_bytes\" is not a byte count");
  std::string text_bw = kColl;
  text_bw.replace(text_bw.find("44.040192"), 9, "\"fast\"");
  EXPECT_EQ(refused(text_bw), "\"coll_busbw_gbs\" is not a number");
  EXPECT_EQ(refused(std::string(70000, ' ')), "a line longer than 64 KiB");
  EXPECT_EQ(refused(std::string(5000, '[') + std::string(5000, ']')), "nested deeper than 64 levels");
  std::string inf = kColl;
  inf.replace(inf.find("44.040192"), 9, "inf");  // %lf of an infinity: not JSON
  EXPECT_EQ(refused(inf), "not a JSON object");
}

TEST(InspectorProm, SamplesUnderOurNamesTheLastOneWins) {
  const std::string text =
      "# a comment\n\n"
      "nccl_bus_bandwidth_gbs{version=\"v5.1\",slurm_job_id=\"9\",node=\"n1\",gpu=\"GPU7\",comm_name=\"PP \\\"a\\\"\",n_nodes=\"2\","
      "nranks=\"16\",collective=\"AllReduce\",message_size=\"2-3GB\",algo_proto=\"Tree_Simple\"} 200.5\n"
      "nccl_collective_exec_time_microseconds{version=\"v5.1\",slurm_job_id=\"9\",node=\"n1\",gpu=\"GPU7\",comm_name=\"PP \\\"a\\\"\","
      "n_nodes=\"2\",nranks=\"16\",collective=\"AllReduce\",message_size=\"2-3GB\",algo_proto=\"Tree_Simple\"} 20000 1767600000000\n"
      "nccl_bus_bandwidth_gbs{version=\"v5.1\",slurm_job_id=\"9\",node=\"n1\",gpu=\"GPU7\",comm_name=\"PP \\\"a\\\"\",n_nodes=\"2\","
      "nranks=\"16\",collective=\"AllReduce\",message_size=\"2-3GB\",algo_proto=\"Tree_Simple\"} 210\n"
      "nccl_p2p_bus_bandwidth_gbs{node=\"n1\",gpu=\"GPU7\",comm_name=\"x\",p2p_operation=\"Send\",message_size=\"1-2KB\"} 0.25\n"
      "node_load1 3\n";
  size_t bad = 99;
  auto records = parse_inspector_prom(text, &bad);
  EXPECT_EQ(bad, 0u);
  ASSERT_EQ(records.size(), 2u);
  const auto& ar = records[0].key.collective == "allreduce" ? records[0] : records[1];
  const auto& send = records[0].key.collective == "allreduce" ? records[1] : records[0];
  EXPECT_EQ(ar.key.comm, "PP \"a\"");
  EXPECT_EQ(ar.key.gpu, "7");
  EXPECT_EQ(ar.key.rank, "none");
  EXPECT_EQ(ar.key.job_id, "9");
  EXPECT_EQ(ar.key.algorithm, "tree");
  EXPECT_EQ(ar.key.protocol, "simple");
  EXPECT_EQ(ar.key.size, std::to_string(uint64_t{2} << 30));
  EXPECT_DOUBLE_EQ(*ar.busbw, 210e9);
  EXPECT_DOUBLE_EQ(*ar.time, 0.02);
  EXPECT_FALSE(ar.algbw);
  EXPECT_EQ(send.key.collective, "send");
  EXPECT_EQ(send.key.size, "1024");
  EXPECT_EQ(send.key.algorithm, "none");
  EXPECT_FALSE(send.time);
}

TEST(InspectorProm, HostileLinesAreCountedNotFatal) {
  const std::string good = "nccl_bus_bandwidth_gbs{collective=\"AllGather\",message_size=\"1-2MB\"} 5\n";
  size_t bad = 0;
  auto records = parse_inspector_prom(
      good +
          "nccl_bus_bandwidth_gbs{collective=\"AllGather\",message_size=\"1-2MB\" 5\n"        // no closing brace
          "nccl_bus_bandwidth_gbs{collective=\"AllGather\",message_size=\"huge\"} 5\n"        // not a size range
          "nccl_bus_bandwidth_gbs{message_size=\"1-2MB\"} 5\n"                                // no collective
          "nccl_bus_bandwidth_gbs{collective=\"A\",collective=\"B\",message_size=\"1-2MB\"} 5\n"  // a label twice
          "nccl_bus_bandwidth_gbs{collective=\"AllGather\",message_size=\"1-2MB\"} fast\n"    // not a number
          "nccl_bus_bandwidth_gbs{collective=\"AllGather\",message_size=\"1-2MB\\\n"          // escape at the end
          "{oops} 1\n" +
          std::string(100000, 'x') + " 1\n",
      &bad);
  EXPECT_EQ(bad, 8u);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_DOUBLE_EQ(*records[0].busbw, 5e9);
  // NaN and infinity are no values: the series has no bandwidth.
  records = parse_inspector_prom("nccl_bus_bandwidth_gbs{collective=\"AllGather\",message_size=\"1-2MB\"} NaN\n", &bad);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].busbw);
}

TEST(InspectorNames, CollectivesInTheBenchSpelling) {
  EXPECT_EQ(inspector_collective_name("AllReduce"), "allreduce");
  EXPECT_EQ(inspector_collective_name("AllToAll"), "alltoall");
  EXPECT_EQ(inspector_collective_name("Send"), "send");
  EXPECT_EQ(inspector_collective_name(""), "none");
  EXPECT_EQ(inspector_collective_name("All_Gather\n"), "allgather");
}

}  // namespace
}  // namespace smddp::diag
