// What the RAS service says, as Prometheus series, for the exporter's
// /metrics (--ras) and `smddp-diag ras --prom-textfile`:
//   smddp_ras_up                          1 when the last query was answered
//   smddp_ras_communicators, smddp_ras_ranks, smddp_ras_missing_ranks, smddp_ras_timeouts
//                                         from the last status (timeouts: RAS's own, while collecting it)
//   smddp_ras_failure{code,action,host,pid,rank}   1 per current failure (ras_codes.h)
//   smddp_ras_failures_total{code,action}         failures seen (each once)
//   smddp_ras_events_total{event}                 monitor events (PEER_DEAD, PEER_NEW, ...)
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "ras/ras_parse.h"

namespace smddp::diag {

class RasMetrics {
 public:
  explicit RasMetrics(prometheus::Registry& registry);
  void set_status(const RasStatus& status);
  void set_down();
  // The failures now: the gauge series are exactly these; new ones count.
  void set_failures(const std::vector<RasFailure>& failures);
  void count_event(const RasEvent& event);

 private:
  using Key = std::tuple<std::string, std::string, std::string, std::string>;  // code, host, pid, rank
  prometheus::Gauge& up_;
  prometheus::Gauge& communicators_;
  prometheus::Gauge& ranks_;
  prometheus::Gauge& missing_;
  prometheus::Gauge& timeouts_;
  prometheus::Family<prometheus::Gauge>& failure_family_;
  prometheus::Family<prometheus::Counter>& failures_total_;
  prometheus::Family<prometheus::Counter>& events_total_;
  std::map<Key, prometheus::Gauge*> failures_;
  std::set<Key> counted_;
};

// The whole textfile (node_exporter's textfile collector) for one status.
std::string ras_textfile(const RasStatus* status, const std::vector<RasFailure>& failures, const std::vector<RasEvent>& events);

}  // namespace smddp::diag
