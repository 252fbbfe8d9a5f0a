#include "latency_summary.h"

#include <prometheus/client_metric.h>

namespace smddp::telemetry {

void LatencySummaries::observe(const prometheus::Labels& labels, std::vector<Quantile> quantiles, uint64_t count,
                               double sum_seconds) {
  std::lock_guard lock(mutex_);
  Entry& entry = entries_[labels];
  entry.quantiles = std::move(quantiles);
  entry.count += count;
  entry.sum_seconds += sum_seconds;
}

std::vector<prometheus::MetricFamily> LatencySummaries::Collect() const {
  std::lock_guard lock(mutex_);
  if (entries_.empty()) return {};
  prometheus::MetricFamily family{name_, help_, prometheus::MetricType::Summary, {}};
  for (const auto& [labels, entry] : entries_) {
    prometheus::ClientMetric metric;
    for (const auto& [name, value] : labels) metric.label.push_back({name, value});
    metric.summary.sample_count = entry.count;
    metric.summary.sample_sum = entry.sum_seconds;
    for (const auto& q : entry.quantiles) metric.summary.quantile.push_back({q.quantile, q.seconds});
    family.metric.push_back(std::move(metric));
  }
  return {family};
}

}  // namespace smddp::telemetry
