// smddp-diag ras: asks NCCL's RAS service (the ncclras port) for the job's
// status, or follows its monitor events, and turns what it says into our
// failure codes (ras_codes.h) and metrics (ras_metrics.h). Exit: 0 no
// failure, 1 a failure code, 3 no answer (timeout, refused, not RAS),
// 64 bad options, 69 no monitor mode in this NCCL.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <iostream>

#include "commands.h"
#include "ras/ras_metrics.h"
#include "ras/ras_query.h"
#include "smddp/error.h"
#include "smddp/tools/atomic_file.h"
#include "smddp/tools/cli_numbers.h"
#include "smddp/tools/exit_codes.h"
#include "smddp/tools/paths.h"

namespace smddp::diag {
namespace {

nlohmann::json failure_json(const RasFailure& f) {
  const RasCode& c = ras_code(f.kind);
  nlohmann::json j{{"code", c.code}, {"action", c.action}, {"host", f.peer.host}, {"pid", f.peer.pid},
                   {"gpus", f.peer.gpus}, {"rank", f.rank}, {"comm", f.comm}, {"detail", f.detail}};
  return j;
}

class RasCommand final : public Command {
 public:
  RasCommand(CLI::App& parent, const GlobalOptions&) {
    app_ = parent.add_subcommand("ras", "Query NCCL's RAS service for the job's health; failure codes and metrics");
    app_->add_option("--address", address_text_, "HOST:PORT of the ncclras port (NCCL_RAS_ADDR)")->capture_default_str();
    app_->add_option("--timeout", ras_timeout_, "Seconds RAS may wait for the job's other processes (its TIMEOUT; 1..3600)")
        ->capture_default_str();
    tools::seconds_option(app_->add_option("--connect-timeout", connect_timeout_, "Seconds to connect and for each answer")
                              ->capture_default_str(), true);
    app_->add_flag("--text", text_, "Ask RAS for its text status (default: JSON where the NCCL has it, 2.28.7+)");
    app_->add_flag("-v,--verbose", verbose_, "VERBOSE STATUS: RAS details more outliers");
    app_->add_flag("--raw", raw_, "Print RAS's answer as it came, before the summary");
    app_->add_flag("--json", json_, "Print the summary as one JSON document (monitor: one per event)");
    tools::seconds_option(app_->add_option("--stuck-after", stuck_after_,
                                           "Query twice, this many seconds apart: ranks whose collective count did not move "
                                           "while others are ahead are SMDDP-RAS-RANK-STUCK (0: one query)"));
    app_->add_flag("--monitor", monitor_, "Follow RAS's monitor events (NCCL 2.29+) until the job ends, SIGINT/SIGTERM or --duration");
    tools::seconds_option(app_->add_option("--duration", duration_, "With --monitor: stop after this many seconds (0: no limit)"));
    app_->add_option("--prom-textfile", textfile_, "Write the metrics for node_exporter's textfile collector (*.prom)");
  }

  CLI::App* app() const override { return app_; }

  void validate() override {
    address_ = parse_ras_address(address_text_, "--address");
    if (ras_timeout_ < 1 || ras_timeout_ > 3600) throw UsageError("--timeout must be 1..3600 seconds");
    if (monitor_ && stuck_after_ > 0) throw UsageError("--stuck-after is for a status query, not --monitor");
    if (!monitor_ && duration_ > 0) throw UsageError("--duration needs --monitor");
    if (monitor_ && (raw_ || verbose_)) throw UsageError("--raw and --verbose are for a status query, not --monitor");
    tools::check_writable(textfile_, "--prom-textfile");
    options_.connect_timeout = connect_timeout_;
    options_.ras_timeout = ras_timeout_;
    options_.json = !text_;
    options_.verbose = verbose_;
  }

  int run() override { return monitor_ ? run_monitor() : run_status(); }

 private:
  int run_status() {
    std::string raw;
    RasStatus status = query_ras_status(address_, options_, std::cerr, &raw);
    std::vector<RasFailure> failures = status.failures;
    if (stuck_after_ > 0) {
      if (!status.json) throw tools::UnavailableError("--stuck-after needs RAS's JSON status (NCCL 2.28.7 or later)");
      wait_or_signal(stuck_after_);
      RasStatus later = query_ras_status(address_, options_, std::cerr, &raw);
      merge_failures(failures, stuck_ranks(status, later));
      merge_failures(failures, later.failures);
      status = std::move(later);
      status.failures = failures;
    }
    if (raw_) std::cout << raw << (raw.empty() || raw.back() == '\n' ? "" : "\n");
    if (json_) {
      nlohmann::json j{{"address", address_.text()},   {"format", status.json ? "json" : "text"},
                       {"nccl_version", status.nccl_version}, {"communicators", status.communicators},
                       {"ranks", status.ranks},        {"missing_ranks", status.missing_ranks},
                       {"timeouts", status.timeouts},  {"failures", nlohmann::json::array()}};
      for (const auto& f : failures) j["failures"].push_back(failure_json(f));
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << "RAS at " << address_.text() << (status.nccl_version.empty() ? "" : " (NCCL " + status.nccl_version + ")")
                << ": " << status.communicators << " communicators, " << status.ranks << " ranks, " << status.missing_ranks
                << " missing, " << status.timeouts << " RAS timeouts" << (failures.empty() ? "; no failures" : "") << "\n";
      for (const auto& f : failures) std::cout << f.text() << "\n";
    }
    if (!textfile_.empty()) tools::write_atomically(textfile_, ras_textfile(&status, failures, {}));
    return failures.empty() ? tools::kExitOk : tools::kExitFailed;
  }

  int run_monitor() {
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    RasMonitor monitor(address_, options_, std::cerr);
    std::cerr << "smddp-diag ras: following RAS events at " << address_.text() << std::endl;
    std::vector<RasEvent> all;
    std::vector<RasFailure> failures;
    const auto start = std::chrono::steady_clock::now();
    bool open = true;
    while (open) {
      double slice = 0.2;
      if (duration_ > 0) {
        const double left = duration_ - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (left <= 0) break;
        slice = std::min(slice, left);
      }
      std::vector<RasEvent> events;
      open = monitor.poll(slice, &events);
      for (const auto& e : events) {
        auto failure = failure_for_event(e);
        print_event(e, failure);
        if (failure) merge_failures(failures, {*failure});
        all.push_back(e);
      }
      if (!events.empty() && !textfile_.empty()) tools::write_atomically(textfile_, ras_textfile(nullptr, failures, all));
      timespec zero{};
      if (sigtimedwait(&stop, nullptr, &zero) > 0) break;
    }
    if (!open) std::cerr << "smddp-diag ras: " << address_.text() << " closed the connection (the job ended)" << std::endl;
    if (!textfile_.empty()) tools::write_atomically(textfile_, ras_textfile(nullptr, failures, all));
    return failures.empty() ? tools::kExitOk : tools::kExitFailed;
  }

  void print_event(const RasEvent& e, const std::optional<RasFailure>& failure) {
    if (json_) {
      nlohmann::json j{{"timestamp", e.timestamp}, {"group", e.group}, {"event", e.event}, {"host", e.peer.host},
                       {"pid", e.peer.pid},        {"gpus", e.peer.gpus}, {"addr", e.addr}, {"details", e.details}};
      if (failure) j["failure"] = failure_json(*failure);
      std::cout << j.dump() << std::endl;
      return;
    }
    std::cout << e.timestamp << " " << e.event << ": " << (e.addr.empty() ? e.peer.text() : e.addr)
              << (e.details.empty() ? "" : " " + e.details) << std::endl;
    if (failure) std::cout << failure->text() << std::endl;
  }

  // Sleeps `seconds`; SIGINT/SIGTERM end the wait (the second query still runs).
  static void wait_or_signal(double seconds) {
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(seconds);
    ts.tv_nsec = static_cast<long>((seconds - std::floor(seconds)) * 1e9);
    (void)sigtimedwait(&stop, nullptr, &ts);
  }

  CLI::App* app_ = nullptr;
  std::string address_text_ = "localhost:28028";
  int ras_timeout_ = 5;
  double connect_timeout_ = 2;
  bool text_ = false, verbose_ = false, raw_ = false, json_ = false, monitor_ = false;
  double stuck_after_ = 0, duration_ = 0;
  std::string textfile_;
  RasAddress address_;
  RasQueryOptions options_;
};

}  // namespace

std::unique_ptr<Command> make_ras_command(CLI::App& parent, const GlobalOptions& global) {
  return std::make_unique<RasCommand>(parent, global);
}

}  // namespace smddp::diag
