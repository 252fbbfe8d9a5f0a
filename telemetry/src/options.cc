// The metrics flags of smddp-bench. CLI11 only converts types; ranges and
// formats are checked by BenchMetrics::create so every bad value is a
// smddp::UsageError with the tool's exit code 64.
#include <CLI/CLI.hpp>

#include "smddp/telemetry/metrics.h"

namespace smddp::telemetry {

void add_metrics_options(CLI::App& app, MetricsOptions& options) {
  const std::string group = "Metrics export";
  app.add_option("--prom-port", options.prom_port, "Serve Prometheus /metrics on this port (0: off)")
      ->group(group);
  app.add_option("--prom-bind", options.prom_bind, "Address for /metrics: IPv4 or IPv6 address ([::1] too) or host name")
      ->capture_default_str()
      ->group(group);
  app.add_option("--linger", options.linger_seconds, "Keep serving /metrics this many seconds after the sweep")
      ->group(group);
  app.add_option("--pushgateway", options.pushgateway_url,
                 "Push results to this Pushgateway (http://HOST:PORT) after every row and at exit")
      ->group(group);
  app.add_option("--job", options.job, "Pushgateway job name")->capture_default_str()->group(group);
  app.add_option("--instance", options.instance, "Pushgateway instance label and EMF Host (default: hostname)")
      ->group(group);
  app.add_option("--emf", options.emf_target,
                 "Write CloudWatch EMF documents to FILE, udp://HOST:PORT or tcp://HOST:PORT (agent: 25888)")
      ->group(group);
  app.add_option("--emf-namespace", options.emf_namespace, "CloudWatch namespace of the EMF metrics")
      ->capture_default_str()
      ->group(group);
}

}  // namespace smddp::telemetry
