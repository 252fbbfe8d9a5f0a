// BenchMetrics: the facade smddp-bench uses; ties the registry to its three
// outputs (endpoint, Pushgateway, EMF) and turns export failures into
// one-line warnings so a sweep never stops for its telemetry.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "bench_registry.h"
#include "emf_row.h"
#include "pushgateway.h"
#include "smddp/error.h"
#include "smddp/telemetry/emf.h"
#include "smddp/telemetry/http_server.h"
#include "smddp/telemetry/metrics.h"

namespace smddp::telemetry {
namespace {

std::string this_host() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "unknown";
  return name;
}

void warn(const std::string& message) {
  // One fputs: the line reaches stderr whole even beside other ranks' output.
  std::fputs(fmt::format("smddp-bench: warning: {}\n", message).c_str(), stderr);
}

}  // namespace

struct BenchMetrics::Impl {
  MetricsOptions options;
  std::string host;
  std::shared_ptr<BenchRegistry> registry;
  std::unique_ptr<MetricsServer> server;  // /metrics, with --prom-port
  std::unique_ptr<Pushgateway> gateway;
  std::unique_ptr<EmfSink> emf;

  Impl(const MetricsOptions& o, const RunInfo& run, const std::string& h)
      : options(o), host(h), registry(std::make_shared<BenchRegistry>(run, h)) {}

  void push(const std::string& what) {
    if (!gateway) return;
    try {
      gateway->push();
    } catch (const std::exception& e) {
      warn(fmt::format("{} ({})", e.what(), what));
    }
  }

  // Builds inside the try too: no export problem may end the sweep.
  template <typename Build>
  void write_emf(Build build, const std::string& what) {
    if (!emf) return;
    try {
      emf->write(build().serialize());
    } catch (const std::exception& e) {
      warn(fmt::format("EMF to {}: {} ({})", emf->describe(), e.what(), what));
    }
  }
};

std::unique_ptr<BenchMetrics> BenchMetrics::create(const MetricsOptions& options, const RunInfo& run) {
  if (!is_cloudwatch_namespace(options.emf_namespace)) {
    throw UsageError(fmt::format(
        "--emf-namespace: '{}' is not a CloudWatch namespace (1..255 of [A-Za-z0-9 ._/#:-], not AWS/...)",
        options.emf_namespace));
  }
  if (!(options.linger_seconds >= 0) || !std::isfinite(options.linger_seconds)) {
    throw UsageError(fmt::format("--linger: {} is not a number of seconds >= 0", options.linger_seconds));
  }
  if (options.prom_port < 0 || options.prom_port > 65535) {
    throw UsageError(fmt::format("--prom-port: {} is outside 0..65535 (0: no endpoint)", options.prom_port));
  }
  const std::string host = options.instance.empty() ? this_host() : options.instance;
  auto impl = std::make_unique<Impl>(options, run, host);
  // Checks without side effects first, the EMF file (created when missing)
  // last: an error leaves no file behind and no port held.
  if (!options.pushgateway_url.empty()) {
    impl->gateway = std::make_unique<Pushgateway>(options.pushgateway_url, options.job, host,
                                                  impl->registry);
  }
  if (options.prom_port > 0) {
    MetricsServerOptions server_options;
    server_options.name = "smddp-bench";
    impl->server = std::make_unique<MetricsServer>(options.prom_bind, options.prom_port, impl->registry, server_options);
  }
  if (!options.emf_target.empty()) impl->emf = open_emf_sink(options.emf_target);
  return std::unique_ptr<BenchMetrics>(new BenchMetrics(std::move(impl)));
}

BenchMetrics::BenchMetrics(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BenchMetrics::~BenchMetrics() = default;

void BenchMetrics::record(const BenchRow& row) {
  impl_->registry->record(row);
  const std::string what = fmt::format("{} {} {} B {}", row.collective, row.backend, row.bytes,
                                       row.in_place ? "in-place" : "out-of-place");
  impl_->push(what);
  impl_->write_emf([&] { return emf_row_document(row, impl_->options.emf_namespace, impl_->options.job, impl_->host); },
                   what);
}

void BenchMetrics::record_timeout(const std::string& collective) {
  impl_->registry->record_timeout(collective);
  const std::string what = fmt::format("{} timeout", collective);
  impl_->push(what);
  impl_->write_emf(
      [&] { return emf_timeout_document(collective, impl_->options.emf_namespace, impl_->options.job, impl_->host); },
      what);
}

void BenchMetrics::finish(int exit_code) {
  impl_->registry->set_exit_code(exit_code);
  impl_->push("final push");
  if (impl_->server && impl_->options.linger_seconds > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(impl_->options.linger_seconds));
  }
}

int BenchMetrics::metrics_port() const { return impl_->server ? impl_->server->port() : 0; }

bool metrics_enabled(const MetricsOptions& options) {
  return options.prom_port > 0 || !options.pushgateway_url.empty() || !options.emf_target.empty();
}

}  // namespace smddp::telemetry
