// The preflight result as Prometheus gauges, shared by the textfile writer
// (node_exporter's textfile collector) and the exporter's /metrics:
//   smddp_preflight_healthy                 1 when every check on this node passed
//   smddp_preflight_check_healthy{check}    1 passed, 0 failed (skipped checks absent); a
//                                           failed one adds code and action labels (failure_codes.h)
//   smddp_preflight_timestamp_seconds       when the preflight ran
#pragma once

#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <map>
#include <string>

#include "preflight/report.h"

namespace smddp::diag {

class PreflightMetrics {
 public:
  explicit PreflightMetrics(prometheus::Registry& registry);
  // Shows `node`'s results, or removes every series when it is null.
  void update(const NodeReport* node, int64_t timestamp_ms);

 private:
  prometheus::Family<prometheus::Gauge>& healthy_family_;
  prometheus::Family<prometheus::Gauge>& check_family_;
  prometheus::Family<prometheus::Gauge>& timestamp_family_;
  prometheus::Gauge* healthy_ = nullptr;
  prometheus::Gauge* timestamp_ = nullptr;
  std::map<std::string, prometheus::Gauge*> checks_;  // by check and code: a new code is a new series
};

// The whole textfile for one node.
std::string preflight_textfile(const NodeReport& node, int64_t timestamp_ms);

}  // namespace smddp::diag
