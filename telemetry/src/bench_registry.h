// The Prometheus metric families of smddp-bench (names, types and labels are
// documented in docs/metrics.md). Thread-safe through prometheus-cpp: the
// /metrics server's threads collect while the sweep records.
#pragma once

#include <memory>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "latency_summary.h"
#include "smddp/telemetry/metrics.h"

namespace smddp::telemetry {

// The quantiles of smddp_bench_latency_seconds, with the BenchRow field each reads.
struct LatencyQuantile {
  double quantile;
  double BenchRow::*field;
};
inline constexpr LatencyQuantile kLatencyQuantiles[] = {
    {0, &BenchRow::min_us},     {0.5, &BenchRow::p50_us}, {0.95, &BenchRow::p95_us},
    {0.99, &BenchRow::p99_us}, {1, &BenchRow::max_us}};

// Label values are cut to this length: the sets are small by construction
// (collective, dtype, backend names), this bounds a surprise.
inline constexpr size_t kMaxLabelValueLength = 128;

// The per-result labels: collective, dtype, op, size, backend, algorithm, placement.
prometheus::Labels row_labels(const BenchRow& row);

// Everything smddp-bench exports: a prometheus::Registry of gauges and
// counters plus the latency summaries. Serve or push it as one Collectable.
class BenchRegistry final : public prometheus::Collectable {
 public:
  BenchRegistry(const RunInfo& run, const std::string& host);
  std::vector<prometheus::MetricFamily> Collect() const override;

  void record(const BenchRow& row);
  void record_timeout(const std::string& collective);
  void set_exit_code(int exit_code);

 private:
  void touch();

  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Gauge>& info_;
  prometheus::Family<prometheus::Gauge>& busbw_;
  prometheus::Family<prometheus::Gauge>& algbw_;
  prometheus::Family<prometheus::Gauge>& time_;
  prometheus::Family<prometheus::Counter>& wrong_;
  prometheus::Family<prometheus::Counter>& bitwise_;
  prometheus::Family<prometheus::Counter>& iterations_;
  prometheus::Family<prometheus::Counter>& results_;
  prometheus::Family<prometheus::Counter>& timeouts_;
  prometheus::Family<prometheus::Counter>& fabric_counters_;
  prometheus::Family<prometheus::Gauge>& last_update_;
  prometheus::Family<prometheus::Gauge>& exit_code_;
  LatencySummaries latency_{"smddp_bench_latency_seconds",
                            "Per-iteration latency of the last result: quantile 0 is the minimum, 1 the maximum"};
};

}  // namespace smddp::telemetry
