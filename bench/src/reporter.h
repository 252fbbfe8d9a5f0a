// Reporters: console table, JSON, CSV, metrics. Each its own file behind
// this interface; only rank 0 reports.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "results.h"
#include "smddp/telemetry/metrics.h"

namespace smddp::bench {

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void begin(const RunContext& ctx) = 0;
  // Called once per row with every backend's and placement's result.
  virtual void row(const std::vector<RowResult>& results) = 0;
  virtual void end(const Summary& summary) = 0;
};

std::unique_ptr<Reporter> make_table_reporter(bool quiet);
std::unique_ptr<Reporter> make_json_reporter(const std::string& path);
std::unique_ptr<Reporter> make_csv_reporter(const std::string& path);
// nullptr when no export is asked for; throws UsageError for bad settings
// (a port in use, a malformed URL) before the sweep starts.
std::unique_ptr<Reporter> make_metrics_reporter(const telemetry::MetricsOptions& options, const RunContext& ctx);

}  // namespace smddp::bench
