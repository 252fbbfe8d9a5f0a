#include "preflight/preflight_metrics.h"

#include <prometheus/text_serializer.h>

#include <sstream>

namespace smddp::diag {

PreflightMetrics::PreflightMetrics(prometheus::Registry& registry)
    : healthy_family_(prometheus::BuildGauge()
                          .Name("smddp_preflight_healthy")
                          .Help("1 when every smddp preflight check on this node passed, else 0")
                          .Register(registry)),
      check_family_(prometheus::BuildGauge()
                        .Name("smddp_preflight_check_healthy")
                        .Help("1 when this smddp preflight check passed on this node, 0 when it failed (skipped checks are absent)")
                        .Register(registry)),
      timestamp_family_(prometheus::BuildGauge()
                            .Name("smddp_preflight_timestamp_seconds")
                            .Help("When the reported smddp preflight ran, Unix time")
                            .Register(registry)) {}

void PreflightMetrics::update(const NodeReport* node, int64_t timestamp_ms) {
  if (!node) {
    if (healthy_) healthy_family_.Remove(healthy_);
    if (timestamp_) timestamp_family_.Remove(timestamp_);
    for (auto& [name, g] : checks_) check_family_.Remove(g);
    healthy_ = timestamp_ = nullptr;
    checks_.clear();
    return;
  }
  if (!healthy_) healthy_ = &healthy_family_.Add({});
  if (!timestamp_) timestamp_ = &timestamp_family_.Add({});
  healthy_->Set(node->healthy() ? 1 : 0);
  timestamp_->Set(static_cast<double>(timestamp_ms) / 1000.0);
  std::map<std::string, prometheus::Gauge*> next;
  for (const auto& c : node->checks) {
    if (c.status == CheckStatus::Skip) continue;
    std::map<std::string, std::string> labels{{"check", c.check}};
    if (const auto* f = c.failure_code()) {
      labels["code"] = f->code;
      labels["action"] = results::to_string(f->action);
    }
    const std::string key = c.check + '\n' + c.code;
    auto it = checks_.find(key);
    prometheus::Gauge* g = it != checks_.end() ? it->second : &check_family_.Add(labels);
    g->Set(c.status == CheckStatus::Pass ? 1 : 0);
    next[key] = g;
  }
  for (auto& [key, g] : checks_) {
    if (!next.count(key)) check_family_.Remove(g);
  }
  checks_ = std::move(next);
}

std::string preflight_textfile(const NodeReport& node, int64_t timestamp_ms) {
  prometheus::Registry registry;
  PreflightMetrics metrics(registry);
  metrics.update(&node, timestamp_ms);
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry.Collect());
  return out.str();
}

}  // namespace smddp::diag
