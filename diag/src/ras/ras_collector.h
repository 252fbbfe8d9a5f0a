// The exporter's --ras collector: a thread that asks one RAS service for
// the status every interval (stuck ranks from two consecutive answers) and
// keeps a monitor connection open between queries for PEER_DEAD events,
// into RasMetrics. Every wait is bounded (RasQueryOptions), so a silent
// server costs smddp_ras_up 0 and one warning line, never a stuck exporter;
// the warning comes again only after the service answered in between.
#pragma once

#include <prometheus/registry.h>

#include <atomic>
#include <mutex>
#include <ostream>
#include <thread>

#include "ras/ras_metrics.h"
#include "ras/ras_query.h"

namespace smddp::diag {

class RasCollector {
 public:
  RasCollector(prometheus::Registry& registry, RasAddress address, RasQueryOptions options, double interval_s,
               std::ostream& warnings);
  // Stops the thread; waits for a query under way (at most its deadline).
  ~RasCollector();

 private:
  void loop();
  void query();
  void follow(double seconds);
  void warn(const std::string& what);

  RasAddress address_;
  RasQueryOptions options_;
  double interval_;
  std::ostream& warnings_;
  RasMetrics metrics_;
  std::optional<RasStatus> last_;
  std::vector<RasFailure> dead_from_events_;
  std::unique_ptr<RasMonitor> monitor_;
  bool monitor_supported_ = true, monitor_try_ = false, warned_ = false;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace smddp::diag
