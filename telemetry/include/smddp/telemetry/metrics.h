// Metrics export for smddp-bench: Prometheus /metrics endpoint, Pushgateway
// push, CloudWatch Embedded Metric Format (EMF). Every metric is documented in
// docs/metrics.md. Only rank 0 creates a BenchMetrics.
//
// Use:
//   MetricsOptions metrics_options;
//   add_metrics_options(app, metrics_options);             // before app.parse
//   auto metrics = BenchMetrics::create(metrics_options, run);   // before the sweep
//   metrics->record(row);                                  // after each result row
//   metrics->finish(exit_code);                            // after the sweep
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace smddp::telemetry {

struct MetricsOptions {
  std::string prom_bind = "127.0.0.1";
  int prom_port = 0;            // 0: no /metrics endpoint
  double linger_seconds = 0;    // keep serving /metrics after the sweep
  std::string pushgateway_url;  // http(s)://HOST[:PORT][/PREFIX]; empty: no push
  std::string job = "smddp-bench";
  std::string instance;         // empty: this host's name
  std::string emf_target;       // FILE | udp://HOST:PORT | tcp://HOST:PORT; empty: none
  std::string emf_namespace = "SMDDP/Bench";
};

// Adds --prom-port, --prom-bind, --linger, --pushgateway, --job, --instance,
// --emf and --emf-namespace (help group "Metrics export"). Values are checked
// by BenchMetrics::create, which throws smddp::UsageError, not by CLI11.
void add_metrics_options(CLI::App& app, MetricsOptions& options);

// True when the options ask for any export (endpoint, push or EMF).
bool metrics_enabled(const MetricsOptions& options);

struct RunInfo {
  std::string version, backends, hosts_csv;
  int nranks = 1;
  int nnodes = 1;
  std::string mem = "host";
};

struct BenchRow {
  std::string collective, dtype, op, backend, algorithm;  // algorithm: e.g. "shm_direct", "mpi", "nccl"
  // smddp-bench's split groups: "all" for a row's aggregate, a group's colour
  // ("0", "1", ...) for its own part; empty without a split (no label then).
  std::string group;
  size_t bytes = 0, count = 0;
  int root = -1;
  bool in_place = false;
  double time_us = 0, algbw_gbps = 0, busbw_gbps = 0;  // GB/s = 1e9 bytes/s as nccl-tests
  double min_us = 0, p50_us = 0, p95_us = 0, p99_us = 0, max_us = 0;  // all 0: no per-iteration stats
  uint64_t wrong = 0, iterations = 0;
  // smddp-bench -B: elements and outputs that differed bit for bit (across
  // repeats, ranks, or from the expected value); unset without -B.
  std::optional<uint64_t> bitwise_differences;
  // RDMA error counters that moved during the row (smddp/tools/fabric_counters.h).
  struct FabricCounter {
    std::string host, device, port, counter;
    uint64_t delta = 0;
  };
  std::vector<FabricCounter> fabric_counters;
};

class BenchMetrics {
 public:
  // Validates everything and binds the port before the sweep. Throws
  // smddp::UsageError (one line) for a port in use, a bad bind address, a
  // malformed --pushgateway URL, --job, --emf target or --emf-namespace, or an
  // EMF file that cannot be opened for appending.
  static std::unique_ptr<BenchMetrics> create(const MetricsOptions& options, const RunInfo& run);
  ~BenchMetrics();
  BenchMetrics(const BenchMetrics&) = delete;
  BenchMetrics& operator=(const BenchMetrics&) = delete;

  // Updates the gauges and counters, pushes to the gateway and writes one EMF
  // document. An unreachable gateway or EMF endpoint costs one warning line on
  // stderr per row and sink; never throws for those.
  void record(const BenchRow& row);
  // Counts a timed-out collective (smddp_bench_timeouts_total), pushes, and
  // writes an EMF document with a Timeouts metric.
  void record_timeout(const std::string& collective);
  // Sets smddp_bench_exit_code, pushes a last time, then keeps serving /metrics
  // for linger_seconds (only when an endpoint is open).
  void finish(int exit_code);

  // The port /metrics is served on; 0 when there is no endpoint.
  int metrics_port() const;

  struct Impl;

 private:
  explicit BenchMetrics(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace smddp::telemetry
