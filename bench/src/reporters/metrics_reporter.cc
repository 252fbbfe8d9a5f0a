// Metrics export as one more reporter: rank 0 feeds every row to the
// telemetry library (Prometheus endpoint, Pushgateway, CloudWatch EMF).
#include "reporters/reporter.h"
#include "smddp/telemetry/metrics.h"

namespace smddp::bench {
namespace {

telemetry::BenchRow to_metrics_row(const RowResult& r) {
  telemetry::BenchRow m;
  m.collective = std::string(to_string(r.collective));
  m.dtype = std::string(to_string(r.dtype));
  m.op = collective_reduces(r.collective) ? std::string(to_string(r.op)) : "none";
  m.backend = r.backend;
  m.algorithm = r.algorithm;
  m.bytes = r.bytes;
  m.count = r.count;
  m.root = r.root;
  m.in_place = r.in_place;
  m.time_us = r.time_us;
  m.algbw_gbps = r.algbw_gbps;
  m.busbw_gbps = r.busbw_gbps;
  if (r.stats) {
    m.min_us = r.stats->min_us;
    m.p50_us = r.stats->p50_us;
    m.p95_us = r.stats->p95_us;
    m.p99_us = r.stats->p99_us;
    m.max_us = r.stats->max_us;
  }
  m.wrong = r.wrong;
  if (r.bitwise) m.bitwise_differences = r.bitwise->differences();
  m.iterations = r.iterations;
  for (const auto& d : r.fabric_counters.deltas) {
    m.fabric_counters.push_back({d.host, d.counter.key.device, std::to_string(d.counter.key.port),
                                 d.counter.key.name, d.counter.delta});
  }
  return m;
}

class MetricsReporter final : public Reporter {
 public:
  explicit MetricsReporter(std::unique_ptr<telemetry::BenchMetrics> metrics) : metrics_(std::move(metrics)) {}
  void begin(const RunContext&) override {}
  void row(const std::vector<RowResult>& results) override {
    for (const auto& r : results) {
      telemetry::BenchRow m = to_metrics_row(r);
      // The deltas belong to the whole row (all its backends): count them once.
      if (&r != &results.front()) m.fabric_counters.clear();
      // Split groups: the aggregate as group "all", then each group's own figures.
      if (!r.groups.empty()) m.group = "all";
      metrics_->record(m);
      for (const GroupResult& g : r.groups) {
        telemetry::BenchRow gm = to_metrics_row(group_row(r, g));
        gm.group = std::to_string(g.group);
        metrics_->record(gm);
      }
    }
  }
  void end(const Summary& s) override {
    if (!s.timed_out_collective.empty()) metrics_->record_timeout(s.timed_out_collective);
    metrics_->finish(s.exit_code);
  }

 private:
  std::unique_ptr<telemetry::BenchMetrics> metrics_;
};

}  // namespace

std::unique_ptr<Reporter> make_metrics_reporter(const telemetry::MetricsOptions& options, const RunContext& ctx) {
  if (!telemetry::metrics_enabled(options)) return nullptr;
  telemetry::RunInfo info;
  info.version = ctx.versions.at("smddp");
  for (const auto& b : ctx.options->backends) info.backends += (info.backends.empty() ? "" : ",") + b;
  for (const auto& h : ctx.hosts) {
    if (info.hosts_csv.find(h) == std::string::npos) info.hosts_csv += (info.hosts_csv.empty() ? "" : ",") + h;
  }
  info.nranks = ctx.nranks;
  info.nnodes = ctx.nnodes;
  info.mem = std::string(to_string(ctx.options->mem));
  return std::make_unique<MetricsReporter>(telemetry::BenchMetrics::create(options, info));
}

}  // namespace smddp::bench
