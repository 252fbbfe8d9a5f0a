#include "ras/ras_metrics.h"

#include <prometheus/text_serializer.h>

#include <sstream>

namespace smddp::diag {
namespace {

prometheus::Gauge& gauge(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
}

constexpr size_t kMaxCounted = 100000;  // failures remembered as counted; a bound for a job that never ends

}  // namespace

RasMetrics::RasMetrics(prometheus::Registry& registry)
    : up_(gauge(registry, "smddp_ras_up", "1 when NCCL's RAS service answered the last query, else 0")),
      communicators_(gauge(registry, "smddp_ras_communicators", "NCCL communicators in the last RAS status")),
      ranks_(gauge(registry, "smddp_ras_ranks", "Ranks of all communicators in the last RAS status")),
      missing_(gauge(registry, "smddp_ras_missing_ranks", "Ranks RAS could not collect data from in the last status")),
      timeouts_(gauge(registry, "smddp_ras_timeouts", "Communication timeouts RAS met while collecting the last status")),
      failure_family_(prometheus::BuildGauge()
                          .Name("smddp_ras_failure")
                          .Help("1 for each current RAS failure: code and action from docs/diag.md, the process's host, pid and rank")
                          .Register(registry)),
      failures_total_(prometheus::BuildCounter()
                          .Name("smddp_ras_failures_total")
                          .Help("RAS failures seen, each counted once, by code and action")
                          .Register(registry)),
      events_total_(prometheus::BuildCounter()
                        .Name("smddp_ras_events_total")
                        .Help("NCCL RAS monitor events received, by event (PEER_DEAD, PEER_NEW, ...)")
                        .Register(registry)) {}

void RasMetrics::set_status(const RasStatus& s) {
  up_.Set(1);
  communicators_.Set(static_cast<double>(s.communicators));
  ranks_.Set(static_cast<double>(s.ranks));
  missing_.Set(static_cast<double>(s.missing_ranks));
  timeouts_.Set(static_cast<double>(s.timeouts));
}

void RasMetrics::set_down() { up_.Set(0); }

void RasMetrics::set_failures(const std::vector<RasFailure>& failures) {
  std::map<Key, prometheus::Gauge*> next;
  for (const auto& f : failures) {
    const RasCode& c = ras_code(f.kind);
    Key key{std::string(c.code), f.peer.host.empty() ? "none" : f.peer.host, f.peer.pid >= 0 ? std::to_string(f.peer.pid) : "none",
            f.rank >= 0 ? std::to_string(f.rank) : "none"};
    if (next.count(key)) continue;
    auto it = failures_.find(key);
    prometheus::Gauge* g = nullptr;
    if (it != failures_.end()) {
      g = it->second;
      failures_.erase(it);
    } else {
      g = &failure_family_.Add({{"code", std::string(c.code)}, {"action", std::string(c.action)}, {"host", std::get<1>(key)},
                                {"pid", std::get<2>(key)}, {"rank", std::get<3>(key)}});
    }
    g->Set(1);
    next[key] = g;
    if (counted_.size() < kMaxCounted && counted_.insert(key).second) {
      failures_total_.Add({{"code", std::string(c.code)}, {"action", std::string(c.action)}}).Increment();
    }
  }
  for (auto& [key, g] : failures_) failure_family_.Remove(g);
  failures_ = std::move(next);
}

void RasMetrics::count_event(const RasEvent& event) {
  std::string name = event.event.substr(0, 64);
  events_total_.Add({{"event", name.empty() ? "none" : name}}).Increment();
}

std::string ras_textfile(const RasStatus* status, const std::vector<RasFailure>& failures, const std::vector<RasEvent>& events) {
  prometheus::Registry registry;
  RasMetrics metrics(registry);
  if (status) metrics.set_status(*status);
  else metrics.set_down();
  for (const auto& e : events) metrics.count_event(e);
  metrics.set_failures(failures);
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry.Collect());
  return out.str();
}

}  // namespace smddp::diag
