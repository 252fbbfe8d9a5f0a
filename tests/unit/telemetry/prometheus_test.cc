// The Prometheus side: registry contents after recorded rows, the registry
// served by the /metrics server (its own tests: http_server_test.cc), the
// Pushgateway client against a loopback HTTP server, and BenchMetrics'
// validation, warnings and --prom-bind on IPv4 and IPv6.
#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "bench_registry.h"
#include "listeners.h"
#include "pushgateway.h"
#include "smddp/error.h"
#include "smddp/telemetry/http_server.h"
#include "smddp/telemetry/metrics.h"

namespace smddp::telemetry {
namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;

struct Seeded {
  unsigned seed = std::random_device{}();
  std::mt19937_64 rng{seed};
  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }
  uint64_t integer(uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); }
};

BenchRow random_row(Seeded& r, const std::string& backend) {
  BenchRow row;
  row.collective = "allreduce";
  row.dtype = "bfloat16";
  row.op = "max";
  row.backend = backend;
  row.algorithm = backend == "mpi" ? "mpi" : "shm_direct";
  row.bytes = r.integer(1, 1 << 20);
  row.time_us = r.uniform(1, 1000);
  row.algbw_gbps = r.uniform(0.1, 100);
  row.busbw_gbps = r.uniform(0.1, 100);
  row.min_us = r.uniform(1, 2);
  row.p50_us = r.uniform(2, 3);
  row.p95_us = r.uniform(3, 4);
  row.p99_us = r.uniform(4, 5);
  row.max_us = r.uniform(5, 6);
  row.wrong = r.integer(1, 100);
  row.iterations = r.integer(1, 100);
  return row;
}

RunInfo run_info() {
  RunInfo run;
  run.version = "0.1.0";
  run.backends = "smddp,mpi";
  run.hosts_csv = "node-a,node-b";
  run.nranks = 4;
  run.nnodes = 2;
  return run;
}

const MetricFamily& find_family(const std::vector<MetricFamily>& families, const std::string& name) {
  for (const auto& f : families) {
    if (f.name == name) return f;
  }
  throw std::runtime_error("no metric family " + name);
}

// The sample of `family` whose labels include every pair of `labels`.
const prometheus::ClientMetric* find_sample(const MetricFamily& family,
                                            const std::map<std::string, std::string>& labels) {
  for (const auto& metric : family.metric) {
    size_t matched = 0;
    for (const auto& l : metric.label) {
      auto it = labels.find(l.name);
      if (it != labels.end() && it->second == l.value) ++matched;
    }
    if (matched == labels.size()) return &metric;
  }
  return nullptr;
}

std::map<std::string, std::string> key_of(const BenchRow& row) {
  return {{"collective", row.collective}, {"dtype", row.dtype},         {"op", row.op},
          {"size", std::to_string(row.bytes)}, {"backend", row.backend}, {"algorithm", row.algorithm},
          {"placement", row.in_place ? "in-place" : "out-of-place"}};
}

TEST(BenchRegistry, RecordsEveryFamilyWithItsLabelsAndBaseUnits) {
  Seeded r;
  SCOPED_TRACE("seed " + std::to_string(r.seed));
  BenchRegistry registry(run_info(), "node-a");
  const BenchRow smddp = random_row(r, "smddp");
  BenchRow mpi = random_row(r, "mpi");
  mpi.in_place = true;
  registry.record(smddp);
  registry.record(mpi);
  registry.record(smddp);  // the same key again: gauges keep the last, counters add up
  const auto families = registry.Collect();

  const auto& info = find_family(families, "smddp_bench_info");
  EXPECT_EQ(info.type, MetricType::Gauge);
  ASSERT_EQ(info.metric.size(), 1u);
  EXPECT_EQ(info.metric[0].gauge.value, 1);
  EXPECT_NE(find_sample(info, {{"version", "0.1.0"}, {"backends", "smddp,mpi"}, {"host", "node-a"},
                               {"nranks", "4"}, {"nnodes", "2"}, {"mem", "host"}, {"hosts", "node-a,node-b"}}),
            nullptr);

  for (const BenchRow* row : std::initializer_list<const BenchRow*>{&smddp, &mpi}) {
    const int times = row == &smddp ? 2 : 1;
    const auto key = key_of(*row);
    const auto* busbw = find_sample(find_family(families, "smddp_bench_busbw_bytes_per_second"), key);
    const auto* algbw = find_sample(find_family(families, "smddp_bench_algbw_bytes_per_second"), key);
    const auto* time = find_sample(find_family(families, "smddp_bench_time_seconds"), key);
    const auto* wrong = find_sample(find_family(families, "smddp_bench_wrong_values_total"), key);
    const auto* iterations = find_sample(find_family(families, "smddp_bench_iterations_total"), key);
    ASSERT_TRUE(busbw && algbw && time && wrong && iterations) << row->backend;
    EXPECT_DOUBLE_EQ(busbw->gauge.value, row->busbw_gbps * 1e9);
    EXPECT_DOUBLE_EQ(algbw->gauge.value, row->algbw_gbps * 1e9);
    EXPECT_DOUBLE_EQ(time->gauge.value, row->time_us * 1e-6);
    EXPECT_DOUBLE_EQ(wrong->counter.value, double(row->wrong * times));
    EXPECT_DOUBLE_EQ(iterations->counter.value, double(row->iterations * times));
    const auto& latency = find_family(families, "smddp_bench_latency_seconds");
    EXPECT_EQ(latency.type, MetricType::Summary);
    const auto* summary = find_sample(latency, key);
    ASSERT_NE(summary, nullptr);
    EXPECT_EQ(summary->summary.sample_count, row->iterations * times);
    EXPECT_NEAR(summary->summary.sample_sum, row->time_us * 1e-6 * double(row->iterations * times), 1e-12);
    const std::vector<std::pair<double, double>> expected = {
        {0, row->min_us}, {0.5, row->p50_us}, {0.95, row->p95_us}, {0.99, row->p99_us}, {1, row->max_us}};
    ASSERT_EQ(summary->summary.quantile.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(summary->summary.quantile[i].quantile, expected[i].first);
      EXPECT_DOUBLE_EQ(summary->summary.quantile[i].value, expected[i].second * 1e-6);
    }
  }
  EXPECT_EQ(find_family(families, "smddp_bench_busbw_bytes_per_second").metric.size(), 2u);
  EXPECT_EQ(find_family(families, "smddp_bench_wrong_values_total").type, MetricType::Counter);
  const auto& results = find_family(families, "smddp_bench_results_total");
  EXPECT_DOUBLE_EQ(find_sample(results, {{"backend", "smddp"}})->counter.value, 2);
  const auto& timeouts = find_family(families, "smddp_bench_timeouts_total");
  ASSERT_EQ(timeouts.metric.size(), 1u);
  EXPECT_EQ(timeouts.metric[0].counter.value, 0) << "present at 0 once a collective has results";
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_NEAR(find_family(families, "smddp_bench_last_update_timestamp_seconds").metric[0].gauge.value, now, 60);
  for (const auto& f : families) EXPECT_NE(f.name, "smddp_bench_exit_code") << "only after the sweep";
}

// smddp-bench -B's differences: a counter per row key, absent without -B.
TEST(BenchRegistry, BitwiseDifferencesOnlyWithBitwise) {
  Seeded r;
  SCOPED_TRACE("seed " + std::to_string(r.seed));
  BenchRegistry registry(run_info(), "node-a");
  BenchRow row = random_row(r, "smddp");
  registry.record(row);
  for (const auto& f : registry.Collect()) EXPECT_NE(f.name, "smddp_bench_bitwise_differences_total") << "no -B";
  row.bitwise_differences = 0;
  registry.record(row);
  row.bitwise_differences = 3;
  registry.record(row);
  const auto families = registry.Collect();
  const auto& bitwise = find_family(families, "smddp_bench_bitwise_differences_total");
  EXPECT_EQ(bitwise.type, MetricType::Counter);
  const auto* sample = find_sample(bitwise, key_of(row));
  ASSERT_NE(sample, nullptr);
  EXPECT_DOUBLE_EQ(sample->counter.value, 3);
}

TEST(BenchRegistry, TimeoutsExitCodeAndMissingStatistics) {
  BenchRegistry registry(run_info(), "node-a");
  Seeded r;
  SCOPED_TRACE("seed " + std::to_string(r.seed));
  BenchRow row = random_row(r, "smddp");
  row.min_us = row.p50_us = row.p95_us = row.p99_us = row.max_us = 0;
  registry.record(row);
  registry.record_timeout("allreduce");
  registry.record_timeout("allreduce");
  registry.record_timeout("alltoall");
  registry.set_exit_code(3);
  const auto families = registry.Collect();
  for (const auto& f : families) EXPECT_NE(f.name, "smddp_bench_latency_seconds") << "no statistics, no quantiles";
  const auto& timeouts = find_family(families, "smddp_bench_timeouts_total");
  EXPECT_DOUBLE_EQ(find_sample(timeouts, {{"collective", "allreduce"}})->counter.value, 2);
  EXPECT_DOUBLE_EQ(find_sample(timeouts, {{"collective", "alltoall"}})->counter.value, 1);
  EXPECT_DOUBLE_EQ(find_family(families, "smddp_bench_exit_code").metric[0].gauge.value, 3);
}

TEST(BenchRegistry, LabelValuesAreBoundedAndNeverEmpty) {
  BenchRow row;
  row.collective = std::string(1000, 'x');
  row.bytes = 8;
  const auto labels = row_labels(row);
  EXPECT_EQ(labels.at("collective").size(), kMaxLabelValueLength);
  EXPECT_EQ(labels.at("algorithm"), "none");
  EXPECT_EQ(labels.at("size"), "8");
  EXPECT_EQ(labels.at("placement"), "out-of-place");
}

// smddp-bench's split groups: a group label only when the row has a group,
// so the series of runs without a split keep their labels.
TEST(BenchRegistry, GroupLabelOnlyWithSplitGroups) {
  BenchRow row;
  row.bytes = 8;
  EXPECT_EQ(row_labels(row).count("group"), 0u);
  row.group = "all";
  EXPECT_EQ(row_labels(row).at("group"), "all");
  BenchRegistry registry(run_info(), "node-a");
  row.busbw_gbps = 2;
  registry.record(row);
  row.group = "1";
  row.busbw_gbps = 1;
  registry.record(row);
  const auto families = registry.Collect();
  const auto& busbw = find_family(families, "smddp_bench_busbw_bytes_per_second");
  EXPECT_DOUBLE_EQ(find_sample(busbw, {{"group", "all"}})->gauge.value, 2e9);
  EXPECT_DOUBLE_EQ(find_sample(busbw, {{"group", "1"}})->gauge.value, 1e9);
}

// ---- the /metrics endpoint ----

TEST(ServeRegistry, ServesTheBenchRegistryOverHttp) {
  auto registry = std::make_shared<BenchRegistry>(run_info(), "node-a");
  Seeded r;
  SCOPED_TRACE("seed " + std::to_string(r.seed));
  const BenchRow row = random_row(r, "smddp");
  registry->record(row);
  MetricsServer server("127.0.0.1", 0, registry);
  ASSERT_GT(server.port(), 0);
  const std::string response = testing::http_get(server.port(), "/metrics");
  EXPECT_NE(response.find("200 OK"), std::string::npos) << response;
  EXPECT_NE(response.find("# TYPE smddp_bench_busbw_bytes_per_second gauge"), std::string::npos);
  EXPECT_NE(response.find("# TYPE smddp_bench_wrong_values_total counter"), std::string::npos);
  EXPECT_NE(response.find("# TYPE smddp_bench_latency_seconds summary"), std::string::npos);
  EXPECT_NE(response.find("smddp_bench_latency_seconds_count{"), std::string::npos);
  EXPECT_NE(response.find("size=\"" + std::to_string(row.bytes) + "\""), std::string::npos);
  // Exactly the registry: no server metrics of its own (the Exposer's
  // exposer_* summaries read NaN until a first scrape had finished).
  EXPECT_EQ(response.find("exposer_"), std::string::npos);
  EXPECT_EQ(response.find("NaN"), std::string::npos);
}

// ---- the Pushgateway client ----

TEST(Pushgateway, RequestLineAndBody) {
  auto registry = std::make_shared<BenchRegistry>(run_info(), "node-a");
  Seeded r;
  SCOPED_TRACE("seed " + std::to_string(r.seed));
  const BenchRow row = random_row(r, "smddp");
  registry->record(row);
  testing::HttpOnce server(200);
  Pushgateway gateway("http://127.0.0.1:" + std::to_string(server.port()), "nightly", "rack 1/node", registry);
  gateway.push();
  const std::string& request = server.request();
  EXPECT_EQ(request.rfind("PUT /metrics/job/nightly/instance@base64/cmFjayAxL25vZGU= HTTP/1.1\r\n", 0), 0u)
      << request.substr(0, 200);
  EXPECT_NE(request.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(request.find("smddp_bench_busbw_bytes_per_second{"), std::string::npos);
  EXPECT_NE(request.find("size=\"" + std::to_string(row.bytes) + "\""), std::string::npos);
}

TEST(Pushgateway, RejectionAndUnreachableGatewayAreErrors) {
  auto registry = std::make_shared<prometheus::Registry>();
  {
    testing::HttpOnce server(400);
    Pushgateway gateway("http://127.0.0.1:" + std::to_string(server.port()), "j", "i", registry);
    try {
      gateway.push();
      ADD_FAILURE() << "HTTP 400 accepted";
    } catch (const smddp::Error& e) {
      EXPECT_NE(std::string(e.what()).find("HTTP 400 pushed metrics are invalid"), std::string::npos) << e.what();
    }
  }
  Pushgateway dead("http://127.0.0.1:" + std::to_string(testing::closed_port()), "j", "i", registry);
  EXPECT_THROW(dead.push(), smddp::Error);
}

TEST(Pushgateway, MalformedUrlsAndJobsAreUsageErrors) {
  auto registry = std::make_shared<prometheus::Registry>();
  for (const std::string url : {"127.0.0.1:9091", "ftp://host:9091", "http://", "http://host:0", "http://host:x",
                                "http://user:pw@host:9091", "http://host:9091/a?b=c", "http://ho st:9091"}) {
    EXPECT_THROW(Pushgateway(url, "j", "i", registry), smddp::UsageError) << url;
  }
  EXPECT_THROW(Pushgateway("http://host:9091", "", "i", registry), smddp::UsageError);
  EXPECT_EQ(Pushgateway("https://gw.example.com/prefix/", "nightly", "node-a", registry).group_url(),
            "https://gw.example.com/prefix/metrics/job/nightly/instance/node-a");
  EXPECT_EQ(Pushgateway("http://[::1]:9091", "j", "", registry).group_url(), "http://[::1]:9091/metrics/job/j");
  EXPECT_EQ(grouping_segment("job", "a-b_c.d"), "job/a-b_c.d");
  EXPECT_EQ(grouping_segment("job", "a/b"), "job@base64/YS9i");
  EXPECT_EQ(grouping_segment("instance", ""), "instance@base64/=");
}

// ---- BenchMetrics ----

MetricsOptions quiet_options() {
  MetricsOptions options;
  options.instance = "node-a";
  return options;
}

TEST(BenchMetrics, CreateRejectsBadOptionsBeforeAnyWork) {
  const RunInfo run = run_info();
  testing::TcpListener occupant;
  std::vector<MetricsOptions> bad(7, quiet_options());
  bad[0].pushgateway_url = "localhost:9091";
  bad[1].emf_target = "udp://127.0.0.1:99999";
  bad[2].emf_namespace = "AWS/Bench";
  bad[3].linger_seconds = -1;
  bad[4].prom_port = 70000;
  bad[5].prom_port = occupant.port();
  bad[6].pushgateway_url = "http://127.0.0.1:9091";
  bad[6].job = "";
  for (size_t i = 0; i < bad.size(); ++i) EXPECT_THROW(BenchMetrics::create(bad[i], run), smddp::UsageError) << i;

  // A port in use is reported before the EMF file is created.
  const std::string file = "/tmp/smddp-emf-never-" + std::to_string(getpid());
  MetricsOptions both = quiet_options();
  both.prom_port = occupant.port();
  both.emf_target = file;
  EXPECT_THROW(BenchMetrics::create(both, run), smddp::UsageError);
  EXPECT_NE(access(file.c_str(), F_OK), 0) << "nothing half-written";
}

TEST(BenchMetrics, UnreachableSinksGiveOneWarningPerRowAndSink) {
  MetricsOptions options = quiet_options();
  options.pushgateway_url = "http://127.0.0.1:" + std::to_string(testing::closed_port());
  options.emf_target = "tcp://127.0.0.1:" + std::to_string(testing::closed_port());
  auto metrics = BenchMetrics::create(options, run_info());
  Seeded r;
  SCOPED_TRACE("seed " + std::to_string(r.seed));
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) metrics->record(random_row(r, "smddp"));
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  std::vector<std::string> lines;
  for (size_t start = 0, end; (end = warnings.find('\n', start)) != std::string::npos; start = end + 1) {
    lines.push_back(warnings.substr(start, end - start));
  }
  ASSERT_EQ(lines.size(), 6u) << warnings;
  int push = 0, emf = 0;
  for (const auto& line : lines) {
    EXPECT_EQ(line.rfind("smddp-bench: warning: ", 0), 0u) << line;
    push += line.find("push to http://127.0.0.1") != std::string::npos;
    emf += line.find("EMF to tcp://127.0.0.1") != std::string::npos;
  }
  EXPECT_EQ(push, 3);
  EXPECT_EQ(emf, 3);
}

TEST(BenchMetrics, FinishSetsTheExitCodeAndLingers) {
  MetricsOptions options = quiet_options();
  options.prom_port = testing::closed_port();
  options.linger_seconds = 3.0;
  auto metrics = BenchMetrics::create(options, run_info());
  ASSERT_EQ(metrics->metrics_port(), options.prom_port);
  Seeded r;
  SCOPED_TRACE("seed " + std::to_string(r.seed));
  metrics->record(random_row(r, "smddp"));
  // Events, not durations: the exit code must be scraped while finish() is
  // still lingering. Without the linger, finish() returns first and the
  // flag is already set when the exit code shows up.
  std::atomic<bool> finished{false};
  std::thread finisher([&] {
    metrics->finish(7);
    finished = true;
  });
  std::string during;
  bool lingering = false;
  for (int i = 0; i < 3000 && during.find("smddp_bench_exit_code 7") == std::string::npos; ++i) {
    lingering = !finished;
    during = testing::http_get(options.prom_port, "/metrics");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  finisher.join();
  EXPECT_NE(during.find("smddp_bench_exit_code 7"), std::string::npos) << during;
  EXPECT_TRUE(lingering) << "finish() returned before its exit code was served";
}

// --prom-bind takes an IPv4 or IPv6 address (with or without brackets) or a
// host name, and serves exactly there.
TEST(BenchMetrics, ServesOnIpv4AndIpv6Loopback) {
  struct Case {
    std::string bind, client;
  };
  std::vector<Case> cases = {{"127.0.0.1", "127.0.0.1"}};
  if (testing::ipv6_loopback()) {
    cases.push_back({"::1", "::1"});
    cases.push_back({"[::1]", "::1"});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.bind);
    MetricsOptions options = quiet_options();
    options.prom_bind = c.bind;
    options.prom_port = c.client == "::1" ? testing::closed_port_v6() : testing::closed_port();
    auto metrics = BenchMetrics::create(options, run_info());
    ASSERT_EQ(metrics->metrics_port(), options.prom_port);
    const std::string response = testing::http_get(options.prom_port, "/metrics", c.client);
    EXPECT_EQ(response.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << response;
    EXPECT_NE(response.find("smddp_bench_info{"), std::string::npos) << response;
    EXPECT_NE(testing::http_get(options.prom_port, "/", c.client).find("smddp-bench: the metrics are at /metrics"),
              std::string::npos);
  }
}

TEST(BenchMetrics, AddsTheFlagsToTheCommandLine) {
  CLI::App app;
  MetricsOptions options;
  add_metrics_options(app, options);
  std::vector<std::string> args = {"--emf-namespace", "X/Y", "--emf", "udp://127.0.0.1:25888", "--instance", "n1",
                                   "--job",           "nightly", "--pushgateway", "http://gw:9091", "--linger", "2.5",
                                   "--prom-bind",     "0.0.0.0", "--prom-port", "9400"};
  std::reverse(args.begin(), args.end());  // CLI11 parses a vector from the back
  app.parse(args);
  EXPECT_EQ(options.prom_port, 9400);
  EXPECT_EQ(options.prom_bind, "0.0.0.0");
  EXPECT_DOUBLE_EQ(options.linger_seconds, 2.5);
  EXPECT_EQ(options.pushgateway_url, "http://gw:9091");
  EXPECT_EQ(options.job, "nightly");
  EXPECT_EQ(options.instance, "n1");
  EXPECT_EQ(options.emf_target, "udp://127.0.0.1:25888");
  EXPECT_EQ(options.emf_namespace, "X/Y");
  EXPECT_TRUE(metrics_enabled(options));
  EXPECT_FALSE(metrics_enabled(MetricsOptions{}));
}

}  // namespace
}  // namespace smddp::telemetry
