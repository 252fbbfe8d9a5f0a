// smddp_bench_latency_seconds as a Prometheus summary built from quantiles the
// bench already measured (prometheus-cpp's Summary only computes its own from
// observations). Quantile 0 is the minimum, 1 the maximum; _count adds up the
// timed iterations and _sum their time, so rate(_sum)/rate(_count) is the mean.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/labels.h>
#include <prometheus/metric_family.h>

namespace smddp::telemetry {

class LatencySummaries final : public prometheus::Collectable {
 public:
  struct Quantile {
    double quantile;
    double seconds;
  };
  LatencySummaries(std::string name, std::string help) : name_(std::move(name)), help_(std::move(help)) {}

  // The last quantiles for these labels; count and sum accumulate.
  void observe(const prometheus::Labels& labels, std::vector<Quantile> quantiles, uint64_t count,
               double sum_seconds);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  struct Entry {
    std::vector<Quantile> quantiles;
    uint64_t count = 0;
    double sum_seconds = 0;
  };
  std::string name_, help_;
  mutable std::mutex mutex_;
  std::map<prometheus::Labels, Entry> entries_;
};

}  // namespace smddp::telemetry
