// Reporters: console table, JSON, CSV, metrics. Each its own file behind
// this interface; only rank 0 reports.
#pragma once

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "sweep/results.h"
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

// When a result file that is rewritten whole is due again: at most every
// second, and never sooner than ten times the last rewrite took, so writing
// costs at most about a tenth of the run however large the file grows.
class RewritePacer {
 public:
  using Clock = std::chrono::steady_clock;
  bool due() const { return Clock::now() - last_ >= std::max(kMinInterval, 10 * took_); }
  void wrote(Clock::time_point started) {
    last_ = Clock::now();
    took_ = last_ - started;
  }

 private:
  static constexpr Clock::duration kMinInterval = std::chrono::seconds(1);
  Clock::time_point last_ = Clock::now();
  Clock::duration took_{};
};

std::unique_ptr<Reporter> make_table_reporter(bool quiet);
// One nccl-tests document per backend: `path` for the first, PATH.BACKEND.json
// (before a .json extension) for each further one (json_reporter.cc).
std::unique_ptr<Reporter> make_json_reporter(const std::string& path);
std::string backend_json_path(const std::string& path, const std::string& backend);
std::unique_ptr<Reporter> make_csv_reporter(const std::string& path);
// nullptr when no export is asked for; throws UsageError for bad settings
// (a port in use, a malformed URL) before the sweep starts.
std::unique_ptr<Reporter> make_metrics_reporter(const telemetry::MetricsOptions& options, const RunContext& ctx);

}  // namespace smddp::bench
