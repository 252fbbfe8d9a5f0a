// smddp-diag exporter: serves node, GPU, EFA and preflight metrics, NCCL
// Inspector output (--inspector) and NCCL RAS (--ras) on /metrics until
// SIGINT or SIGTERM (or --exit-after).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <iostream>

#include "commands.h"
#include "smddp/tools/cli_numbers.h"
#include "smddp/common/numbers.h"
#include "smddp/tools/atomic_file.h"
#include "smddp/tools/exit_codes.h"
#include "smddp/tools/input_file.h"
#include "smddp/tools/paths.h"
#include "shared/text.h"
#include "exporter/inspector_source.h"
#include "exporter/node_sampler.h"
#include "ras/ras_collector.h"
#include "smddp/error.h"
#include "smddp/telemetry/http_server.h"

namespace smddp::diag {
namespace {

class ExporterCommand final : public Command {
 public:
  ExporterCommand(CLI::App& parent, const GlobalOptions& global) : global_(global) {
    app_ = parent.add_subcommand("exporter", "Serve node, GPU, EFA and preflight metrics for Prometheus");
    app_->add_option("--listen", listen_, "ADDRESS:PORT to serve /metrics on; [IPV6]:PORT for IPv6, [::] for every interface, HOSTNAME:PORT (port 0: any free port)")
        ->capture_default_str();
    tools::seconds_option(app_->add_option("--interval", interval_, "Seconds between samples")->capture_default_str(), true);
    app_->add_option("--preflight-report", report_, "Preflight JSON report to export (re-read every interval)");
    app_->add_option("--inspector", inspector_,
                     "NCCL Inspector output: a directory of its .log/.jsonl and .prom files, or one file (re-read every interval)");
    app_->add_option("--ras", ras_text_, "HOST:PORT of an NCCL job's RAS port (ncclras, default port 28028) to query every interval");
    tools::seconds_option(app_->add_option("--ras-interval", ras_interval_, "Seconds between RAS status queries")->capture_default_str(), true);
    app_->add_option("--ras-timeout", ras_timeout_, "Seconds RAS may wait for the job's other processes (1..3600)")->capture_default_str();
    app_->add_option("--port-file", port_file_, "Write the listening port to this file once serving");
    tools::seconds_option(app_->add_option("--exit-after", exit_after_, "Stop after this many seconds (0: run until SIGINT/SIGTERM)")->capture_default_str());
  }

  CLI::App* app() const override { return app_; }

  void validate() override {
    root_ = SystemRoot::from_option(global_.sysfs_root);
    nvml_library(global_.nvml_library);  // refuses an unreadable file before any work
    const size_t colon = listen_.rfind(':');
    if (colon == std::string::npos) throw UsageError("--listen '" + listen_ + "' is not ADDRESS:PORT");
    bind_ = listen_.substr(0, colon);
    if (bind_.empty()) bind_ = "0.0.0.0";
    auto port = common::parse_integer(listen_.substr(colon + 1));
    if (!port || *port < 0 || *port > 65535) throw UsageError("--listen '" + listen_ + "': port must be 0..65535");
    port_ = static_cast<int>(*port);
    if (!(interval_ >= 0.05) || !std::isfinite(interval_)) throw UsageError("--interval must be at least 0.05 seconds");
    if (!(exit_after_ >= 0)) throw UsageError("--exit-after must not be negative");
    tools::check_writable(port_file_, "--port-file");
    if (!inspector_.empty()) InspectorSource::check_path(inspector_);
    if (!ras_text_.empty()) ras_address_ = parse_ras_address(ras_text_, "--ras");
    if (!(ras_interval_ >= 0.05)) throw UsageError("--ras-interval must be at least 0.05 seconds");
    if (ras_timeout_ < 1 || ras_timeout_ > 3600) throw UsageError("--ras-timeout must be 1..3600 seconds");
    // The report may come later (preflight writes it), but a path that holds
    // something no reading can use (a directory, FIFO, device, a huge file)
    // is refused now. A FIFO put there later is skipped each interval: the
    // bounded reader never waits on it, so SIGTERM still ends the exporter.
    struct stat st {};
    if (!report_.empty() && ::stat(report_.c_str(), &st) == 0) {
      (void)tools::read_input_file(report_, "--preflight-report '" + report_ + "'");
    }
  }

  int run() override {
    // Signals go to this thread only (the HTTP threads inherit the mask).
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);

    // Listening comes first: a port in use is a usage error before any work.
    auto registry = std::make_shared<prometheus::Registry>();
    telemetry::MetricsServerOptions server_options;
    server_options.name = "smddp-diag exporter";
    telemetry::MetricsServer server(bind_, port_, registry, server_options);
    NodeSampler sampler(*registry, root_, nvml_library(global_.nvml_library), report_);
    std::unique_ptr<InspectorSource> inspector;
    if (!inspector_.empty()) inspector = std::make_unique<InspectorSource>(*registry, inspector_, std::cerr);
    auto sample = [&] {
      sampler.sample();
      if (inspector) inspector->sample();
    };
    sample();
    std::unique_ptr<RasCollector> ras;
    if (ras_address_) {
      RasQueryOptions options;
      options.ras_timeout = ras_timeout_;
      ras = std::make_unique<RasCollector>(*registry, *ras_address_, options, ras_interval_, std::cerr);
    }
    if (!port_file_.empty()) tools::write_atomically(port_file_, std::to_string(server.port()) + "\n");
    if (!sampler.nvml_warning().empty()) std::cerr << sampler.nvml_warning() << std::endl;
    std::cout << "smddp-diag exporter: serving " << server.url() << std::endl;

    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      double wait = interval_;
      if (exit_after_ > 0) {
        double left = exit_after_ - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (left <= 0) break;
        wait = std::min(wait, left);
      }
      timespec ts{};
      ts.tv_sec = static_cast<time_t>(wait);
      ts.tv_nsec = static_cast<long>((wait - static_cast<double>(ts.tv_sec)) * 1e9);
      int sig = sigtimedwait(&stop, nullptr, &ts);
      if (sig == SIGINT || sig == SIGTERM) break;
      if (sig < 0 && errno != EAGAIN && errno != EINTR) break;
      sample();
    }
    return tools::kExitOk;
  }

 private:
  const GlobalOptions& global_;
  CLI::App* app_ = nullptr;
  // 9466: clear of DCGM exporter's 9400, the bench example's 9464 and node_exporter's 9100.
  std::string listen_ = "0.0.0.0:9466";
  double interval_ = 5;
  std::string report_, port_file_, inspector_, ras_text_;
  int ras_timeout_ = 5;
  double ras_interval_ = 15;  // a status gathers from every process of the job: not every 5 s
  std::optional<RasAddress> ras_address_;
  double exit_after_ = 0;
  SystemRoot root_;
  std::string bind_;
  int port_ = 9466;
};

}  // namespace

std::unique_ptr<Command> make_exporter_command(CLI::App& parent, const GlobalOptions& global) {
  return std::make_unique<ExporterCommand>(parent, global);
}

}  // namespace smddp::diag
