// EMF documents (structure and limits of the CloudWatch specification,
// escaping of hostile strings) and the three EMF sinks against real loopback
// listeners and a real file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "emf_check.h"
#include "emf_row.h"
#include "listeners.h"
#include "smddp/error.h"
#include "smddp/telemetry/emf.h"

namespace smddp::telemetry {
namespace {

using nlohmann::json;
using testing::emf_violations;

// Random but reproducible: the seed is printed with every failure.
struct Seeded {
  unsigned seed = std::random_device{}();
  std::mt19937_64 rng{seed};
  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }
  uint64_t integer(uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); }
};

BenchRow random_row(Seeded& r) {
  BenchRow row;
  row.collective = "allreduce";
  row.dtype = "float32";
  row.op = "sum";
  row.backend = "smddp";
  row.algorithm = "ring";
  row.bytes = r.integer(1, 1 << 30);
  row.count = row.bytes / 4;
  row.in_place = r.integer(0, 1) == 1;
  row.time_us = r.uniform(1, 1e6);
  row.algbw_gbps = r.uniform(0.1, 400);
  row.busbw_gbps = r.uniform(0.1, 400);
  row.min_us = r.uniform(1, 10);
  row.p50_us = row.min_us + r.uniform(0, 10);
  row.p95_us = row.p50_us + r.uniform(0, 10);
  row.p99_us = row.p95_us + r.uniform(0, 10);
  row.max_us = row.p99_us + r.uniform(0, 10);
  row.wrong = r.integer(0, 1000);
  row.iterations = r.integer(1, 1000);
  return row;
}

TEST(EmfDocument, RowDocumentFollowsTheSpecification) {
  Seeded r;
  SCOPED_TRACE("seed " + std::to_string(r.seed));
  const BenchRow row = random_row(r);
  const json doc = json::parse(emf_row_document(row, "SMDDP/Bench", "job-1", "node-a").serialize());

  EXPECT_EQ(emf_violations(doc), std::vector<std::string>{});
  const auto& directive = doc["_aws"]["CloudWatchMetrics"][0];
  EXPECT_EQ(directive["Namespace"], "SMDDP/Bench");
  EXPECT_EQ(directive["Dimensions"][0],
            json({"Collective", "DataType", "Op", "Backend", "Algorithm", "Size", "Placement"}));
  EXPECT_EQ(directive["Dimensions"][1], json({"Collective", "Backend", "Size"}));
  EXPECT_EQ(doc["Size"], std::to_string(row.bytes));
  EXPECT_EQ(doc["Placement"], row.in_place ? "in-place" : "out-of-place");
  EXPECT_DOUBLE_EQ(doc["BusBandwidth"].get<double>(), row.busbw_gbps);
  EXPECT_DOUBLE_EQ(doc["AlgBandwidth"].get<double>(), row.algbw_gbps);
  EXPECT_DOUBLE_EQ(doc["Time"].get<double>(), row.time_us);
  EXPECT_DOUBLE_EQ(doc["LatencyP99"].get<double>(), row.p99_us);
  EXPECT_EQ(doc["WrongValues"].get<uint64_t>(), row.wrong);
  EXPECT_EQ(doc["Iterations"].get<uint64_t>(), row.iterations);
  EXPECT_EQ(doc["Bytes"].get<uint64_t>(), row.bytes);
  EXPECT_EQ(doc["Host"], "node-a");
  std::map<std::string, std::string> units;
  for (const auto& m : directive["Metrics"]) units[m["Name"]] = m["Unit"];
  EXPECT_EQ(units["BusBandwidth"], "Gigabytes/Second");
  EXPECT_EQ(units["Time"], "Microseconds");
  EXPECT_EQ(units["WrongValues"], "Count");
}

TEST(EmfDocument, RowWithoutPerIterationStatsHasNoLatencyMetrics) {
  Seeded r;
  SCOPED_TRACE("seed " + std::to_string(r.seed));
  BenchRow row = random_row(r);
  row.min_us = row.p50_us = row.p95_us = row.p99_us = row.max_us = 0;
  const json doc = json::parse(emf_row_document(row, "SMDDP/Bench", "j", "h").serialize());
  EXPECT_EQ(emf_violations(doc), std::vector<std::string>{});
  EXPECT_FALSE(doc.contains("LatencyP50"));
  EXPECT_EQ(doc["_aws"]["CloudWatchMetrics"][0]["Metrics"].size(), 5u);
}

TEST(EmfDocument, SplitGroupIsADimension) {
  Seeded r;
  SCOPED_TRACE("seed " + std::to_string(r.seed));
  BenchRow row = random_row(r);
  EXPECT_FALSE(json::parse(emf_row_document(row, "SMDDP/Bench", "j", "h").serialize()).contains("Group"));
  row.group = "3";
  const json doc = json::parse(emf_row_document(row, "SMDDP/Bench", "j", "h").serialize());
  EXPECT_EQ(emf_violations(doc), std::vector<std::string>{});
  EXPECT_EQ(doc["Group"], "3");
  const auto& dims = doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"];
  EXPECT_EQ(dims[0], json({"Collective", "DataType", "Op", "Backend", "Algorithm", "Size", "Placement", "Group"}));
  EXPECT_EQ(dims[1], json({"Collective", "Backend", "Size", "Group"}));
}

TEST(EmfDocument, TimestampIsMilliseconds) {
  const auto before = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  const json doc = json::parse(emf_timeout_document("allgather", "SMDDP/Bench", "j", "h").serialize());
  const auto after = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
  const int64_t ts = doc["_aws"]["Timestamp"];
  EXPECT_GE(ts, before);
  EXPECT_LE(ts, after);
  EXPECT_EQ(emf_violations(doc), std::vector<std::string>{});
  EXPECT_EQ(doc["Timeouts"], 1);
  EXPECT_EQ(doc["Collective"], "allgather");
}

TEST(EmfDocument, HostileStringsAreEscaped) {
  const std::string hostile = std::string("a\"b\\c\nd\re\tf") + '\x01' + "</script>\xff\xfe{\"_aws\":1}";
  EmfDocument doc("SMDDP/Bench", 1'700'000'000'000);
  doc.set_dimension("Host", hostile);
  doc.set_dimension("Name\"with\nquote", "v");
  doc.add_dimension_set({"Host", "Name\"with\nquote"});
  doc.add_metric("Value", "Count", 3);
  doc.set_property("Note", hostile);
  const std::string text = doc.serialize();

  EXPECT_EQ(text.find('\n'), std::string::npos) << "one document per line";
  const json parsed = json::parse(text);  // throws on broken escaping
  EXPECT_EQ(emf_violations(parsed).size(), 1u) << "only the timestamp (2023) is not now";
  const std::string host = parsed["Host"];
  EXPECT_EQ(host.substr(0, 12), std::string("a\"b\\c\nd\re\tf") + '\x01');
  EXPECT_NE(host.find("</script>"), std::string::npos);
  EXPECT_NE(host.find("\xEF\xBF\xBD"), std::string::npos) << "invalid UTF-8 becomes U+FFFD";
  EXPECT_TRUE(parsed["_aws"].contains("CloudWatchMetrics")) << "a value cannot inject _aws";
  EXPECT_EQ(parsed["Name\"with\nquote"], "v");
}

TEST(EmfDocument, EnforcesTheLimitsOfTheSpecification) {
  EmfDocument doc("SMDDP/Bench", 1);
  for (size_t i = 0; i < kEmfMaxMetrics; ++i) doc.add_metric("M" + std::to_string(i), "None", double(i) + 1);
  EXPECT_THROW(doc.add_metric("M100", "None", 1), std::invalid_argument);
  EXPECT_EQ(doc.metric_count(), 100u);

  std::vector<std::string> thirty_one;
  for (int i = 0; i < 31; ++i) {
    doc.set_dimension("D" + std::to_string(i), "v");
    thirty_one.push_back("D" + std::to_string(i));
  }
  const std::vector<std::string> thirty(thirty_one.begin(), thirty_one.end() - 1);
  EXPECT_NO_THROW(doc.add_dimension_set(thirty));
  EXPECT_THROW(doc.add_dimension_set(thirty_one), std::invalid_argument);
  EXPECT_THROW(doc.add_dimension_set({}), std::invalid_argument);
  EXPECT_THROW(doc.add_metric("X", "GB/s", 1), std::invalid_argument);
  EXPECT_THROW(doc.add_metric("M5", "None", 1), std::invalid_argument) << "duplicate name";
  EXPECT_THROW(doc.set_dimension("M5", "v"), std::invalid_argument) << "a metric is not a dimension";
  EXPECT_THROW(doc.set_dimension("_aws", "v"), std::invalid_argument);
  EXPECT_THROW(doc.set_dimension("Empty", ""), std::invalid_argument);
  EXPECT_EQ(emf_violations(json::parse(doc.serialize())).size(), 1u) << "only the timestamp";
}

TEST(EmfDocument, DimensionSetMustNameStringMembers) {
  EmfDocument doc("SMDDP/Bench", 1);
  doc.add_metric("Value", "Count", 1);
  doc.add_dimension_set({"Missing"});
  EXPECT_THROW(doc.serialize(), std::invalid_argument);
}

TEST(EmfDocument, NonFiniteValuesAreLeftOut) {
  EmfDocument doc("SMDDP/Bench", 1);
  doc.add_metric("Nan", "Count", std::nan(""));
  doc.add_metric("Inf", "Count", INFINITY);
  doc.add_metric("Fine", "Count", 2);
  const json parsed = json::parse(doc.serialize());
  EXPECT_EQ(parsed["_aws"]["CloudWatchMetrics"][0]["Metrics"].size(), 1u);
  EXPECT_FALSE(parsed.contains("Nan"));
}

TEST(EmfDocument, UnitsAndNamespaces) {
  for (const auto& unit : testing::cloudwatch_units()) EXPECT_TRUE(is_cloudwatch_unit(unit)) << unit;
  EXPECT_FALSE(is_cloudwatch_unit("GB/s"));
  EXPECT_FALSE(is_cloudwatch_unit("seconds"));
  EXPECT_TRUE(is_cloudwatch_namespace("SMDDP/Bench"));
  EXPECT_TRUE(is_cloudwatch_namespace("My App:v1#2_x-y.z"));
  EXPECT_FALSE(is_cloudwatch_namespace(""));
  EXPECT_FALSE(is_cloudwatch_namespace("AWS/EC2"));
  EXPECT_FALSE(is_cloudwatch_namespace("bad\"quote"));
  EXPECT_FALSE(is_cloudwatch_namespace(std::string(256, 'a')));
  EXPECT_THROW(EmfDocument("AWS/Mine", 1), std::invalid_argument);
}

// ---- sinks ----

TEST(EmfSink, UdpListenerReceivesOneDocumentPerDatagram) {
  testing::UdpListener listener;
  auto sink = open_emf_sink("udp://127.0.0.1:" + std::to_string(listener.port()));
  EXPECT_EQ(sink->describe(), "udp://127.0.0.1:" + std::to_string(listener.port()));
  Seeded r;
  SCOPED_TRACE("seed " + std::to_string(r.seed));
  const BenchRow row = random_row(r);
  sink->write(emf_row_document(row, "SMDDP/Bench", "j", "h").serialize());
  sink->write(emf_timeout_document("broadcast", "SMDDP/Bench", "j", "h").serialize());
  const auto first = listener.receive();
  const auto second = listener.receive();
  ASSERT_TRUE(first && second);
  const json a = json::parse(*first), b = json::parse(*second);
  EXPECT_EQ(emf_violations(a), std::vector<std::string>{});
  EXPECT_DOUBLE_EQ(a["BusBandwidth"].get<double>(), row.busbw_gbps);
  EXPECT_EQ(b["Collective"], "broadcast");
}

TEST(EmfSink, TcpListenerReceivesNewlineTerminatedDocumentsAndReconnects) {
  testing::TcpListener listener;
  auto sink = open_emf_sink("tcp://127.0.0.1:" + std::to_string(listener.port()));
  sink->write(emf_timeout_document("allreduce", "SMDDP/Bench", "j", "h").serialize());
  ASSERT_TRUE(listener.accept());
  const auto line = listener.read_line();
  ASSERT_TRUE(line);
  EXPECT_EQ(json::parse(*line)["Collective"], "allreduce");

  listener.close_peer();  // the agent restarts: the sink notices and reconnects
  usleep(50'000);
  sink->write(emf_timeout_document("allgather", "SMDDP/Bench", "j", "h").serialize());
  ASSERT_TRUE(listener.accept());
  const auto again = listener.read_line();
  ASSERT_TRUE(again);
  EXPECT_EQ(json::parse(*again)["Collective"], "allgather");
}

TEST(EmfSink, TcpWithoutListenerThrowsEachTime) {
  auto sink = open_emf_sink("tcp://127.0.0.1:" + std::to_string(testing::closed_port()));
  const std::string doc = emf_timeout_document("allreduce", "SMDDP/Bench", "j", "h").serialize();
  for (int i = 0; i < 2; ++i) {
    try {
      sink->write(doc);
      ADD_FAILURE() << "no error without a listener";
    } catch (const smddp::Error& e) {
      EXPECT_NE(std::string(e.what()).find("Connection refused"), std::string::npos) << e.what();
    }
  }
}

TEST(EmfSink, FileSinkAppendsOneDocumentPerLine) {
  const auto path = std::filesystem::temp_directory_path() / ("smddp-emf-" + std::to_string(getpid()) + ".log");
  {
    std::ofstream(path) << "existing line\n";
  }
  {
    auto sink = open_emf_sink(path.string());
    sink->write(emf_timeout_document("allreduce", "SMDDP/Bench", "j", "h").serialize());
    sink->write(emf_timeout_document("reduce", "SMDDP/Bench", "j", "h").serialize());
  }
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::filesystem::remove(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "existing line");
  EXPECT_EQ(json::parse(lines[1])["Collective"], "allreduce");
  EXPECT_EQ(json::parse(lines[2])["Collective"], "reduce");
  EXPECT_EQ(emf_violations(json::parse(lines[2])), std::vector<std::string>{});
}

TEST(EmfSink, BadTargetsAreUsageErrors) {
  for (const std::string target :
       {"", "http://127.0.0.1:25888", "udp://", "udp://:25888", "udp://127.0.0.1:0", "udp://127.0.0.1:65536",
        "tcp://127.0.0.1:port", "tcp://[::1", "udp://::1:25888", "tcp://host name:1",
        "/nonexistent-dir-smddp/x.log"}) {
    EXPECT_THROW(open_emf_sink(target), smddp::UsageError) << target;
  }
  EXPECT_NO_THROW(open_emf_sink("udp://[::1]:25888"));
  EXPECT_NO_THROW(open_emf_sink("tcp://localhost"));  // default port 25888, connects lazily
}

}  // namespace
}  // namespace smddp::telemetry
