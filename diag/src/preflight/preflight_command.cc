// smddp-diag preflight: health checks from a YAML profile, alone (one
// process per node, e.g. a Slurm prolog) or under mpirun across the job.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "commands.h"
#include "smddp/tools/atomic_file.h"
#include "smddp/tools/exit_codes.h"
#include "smddp/tools/paths.h"
#include "shared/model_floor.h"
#include "shared/mpi_util.h"
#include "shared/text.h"
#include "preflight/consistency_check.h"
#include "preflight/golden.h"
#include "preflight/preflight_metrics.h"
#include "preflight/runner.h"
#include "preflight/writers.h"
#include "smddp/error.h"
#include "smddp/telemetry/emf.h"
#include "system/nvml.h"

namespace smddp::diag {
namespace {

class PreflightCommand final : public Command {
 public:
  PreflightCommand(CLI::App& parent, const GlobalOptions& global) : global_(global) {
    app_ = parent.add_subcommand("preflight", "Health checks from a profile; one line per node, exit 0 healthy, 1 unhealthy");
    app_->add_option("-p,--profile", profile_name_, "Profile name (p4d.24xlarge, p4de.24xlarge, p5.48xlarge, local) or YAML file")->required();
    app_->add_option("--checks", only_, "Run only these checks (comma list)")->delimiter(',');
    app_->add_option("--skip", skip_, "Do not run these checks (comma list)")->delimiter(',');
    app_->add_option("--json", json_path_, "Write the JSON report to FILE ('-': stdout instead of the lines)");
    app_->add_option("--prom-textfile", textfile_, "Write this node's result for node_exporter's textfile collector (*.prom)");
    app_->add_option("--emf", emf_target_, "Write CloudWatch EMF documents to FILE, udp://HOST:PORT or tcp://HOST:PORT");
    app_->add_option("--emf-namespace", emf_namespace_, "CloudWatch namespace of the EMF documents")->capture_default_str();
    app_->add_flag("--print-drain", print_drain_, "Print the Slurm drain command for each unhealthy node");
    app_->add_flag("--drain", drain_, "Run those drain commands (scontrol) from rank 0");
    app_->add_option("--model", model_path_, "smddp-model file: allreduce_busbw expects its prediction for the job's shape (replaces the profile's floor)");
    app_->add_option("--model-tolerance", model_tolerance_pct_, "With --model: fail below the prediction by more than PCT percent")->capture_default_str();
    app_->add_option("--golden", golden_path_, "Golden file (smddp-diag golden learn): consistency fails every node that differs from it");
    app_->add_flag("-v,--verbose", verbose_, "Print every check's status and reason under its node");
  }

  CLI::App* app() const override { return app_; }

  void validate() override {
    setup_.root = SystemRoot::from_option(global_.sysfs_root);
    setup_.nvml_library = nvml_library(global_.nvml_library);
    setup_.profile = load_profile(profile_name_);
    select_checks(setup_.profile, only_, skip_);
    setup_.only = only_;
    setup_.skip = skip_;
    setup_.faults = Faults::from_env();
    if (!model_path_.empty() || app_->count("--model-tolerance")) validate_model();
    if (app_->count("--golden")) {
      const bool judged = std::any_of(setup_.profile.checks.begin(), setup_.profile.checks.end(),
                                      [](const CheckConfig& c) { return c.spec->name == "consistency"; });
      if (!judged) throw UsageError("--golden is judged by the consistency check, which profile '" + setup_.profile.name + "' does not run here");
      setup_.golden = load_golden(golden_path_);
    }
    tools::check_writable(json_path_, "--json");
    tools::check_writable(textfile_, "--prom-textfile");
    if (!emf_target_.empty()) {
      if (!telemetry::is_cloudwatch_namespace(emf_namespace_)) {
        throw UsageError("--emf-namespace '" + emf_namespace_ + "' is not a CloudWatch namespace");
      }
      telemetry::open_emf_sink(emf_target_);  // throws UsageError for a bad target
    }
  }

  int run() override {
    if (!launched_by_mpi()) {
      PreflightReport report = run_preflight_alone(setup_);
      write_outputs(report);
      if (!textfile_.empty()) tools::write_atomically(textfile_, preflight_textfile(report.nodes.front(), report.timestamp_ms));
      drain(report);
      return report.healthy() ? tools::kExitOk : tools::kExitFailed;
    }
    MpiSession mpi;
    PreflightOutcome out = run_preflight_mpi(setup_);
    if (!out.message.empty()) std::cerr << out.message << "\n";
    if (!out.ran) {  // the ranks disagreed, or one never checked in: no checks ran, no file written
      if (out.root && out.peers_missing) mpi.abort(out.exit_code);
      return out.exit_code;
    }
    if (out.my_node && !textfile_.empty()) tools::write_atomically(textfile_, preflight_textfile(*out.my_node, out.report.timestamp_ms));
    if (out.root) {
      write_outputs(out.report);
      drain(out.report);
      if (out.peers_missing) {
        std::cerr << "smddp-diag preflight: some ranks did not report; ending the job\n";
        std::cout.flush();
        mpi.abort(out.exit_code == tools::kExitOk ? tools::kExitFailed : out.exit_code);
      }
    }
    return out.exit_code;
  }

 private:
  // --model: readable, predicting the allreduce_busbw check's shape as the
  // launcher announces it (run_preflight_mpi checks the job's real one).
  void validate_model() {
    setup_.model = load_model_option(model_path_, model_tolerance_pct_);
    const CheckConfig* check = nullptr;
    for (const auto& c : setup_.profile.checks) {
      if (c.spec->name == "allreduce_busbw") check = &c;
    }
    if (!check) throw UsageError("--model judges the allreduce_busbw check, which profile '" + setup_.profile.name + "' does not run here");
    const int per_node = launcher_ranks_per_node().value_or(1);
    int nodes = 2;
    if (const char* w = std::getenv("OMPI_COMM_WORLD_SIZE")) nodes = std::max(1, std::atoi(w) / per_node);
    model_allreduce_floor(*setup_.model, "auto", nodes, per_node, check->params.size("bytes").value_or(0));
  }

  void write_outputs(const PreflightReport& report) {
    // Advice on obsolete settings: never a failure, so on stderr beside the lines.
    for (const auto& line : advice_lines(report)) std::cerr << line << "\n";
    if (json_path_ == "-") {
      std::cout << to_json(report).dump(2) << "\n";
    } else {
      std::cout << report_lines(report, verbose_);
      if (!json_path_.empty()) tools::write_atomically(json_path_, to_json(report).dump(2) + "\n");
    }
    if (!emf_target_.empty()) {
      try {
        write_emf(report, emf_target_, emf_namespace_);
      } catch (const std::exception& e) {
        std::cerr << "smddp-diag preflight: EMF: " << e.what() << "\n";
      }
    }
    std::cout.flush();
  }

  void drain(const PreflightReport& report) {
    for (const auto& d : drain_commands(report)) {
      // With the JSON on stdout, stdout must stay one JSON document.
      if (print_drain_) (json_path_ == "-" ? std::cerr : std::cout) << d.shell() << "\n";
      if (drain_) {
        std::string error;
        int rc = run_drain(d, &error);
        if (rc != 0) {
          std::cerr << "smddp-diag preflight: drain of " << d.host << " failed: "
                    << (rc < 0 ? error : "scontrol exited with " + std::to_string(rc)) << "\n";
        }
      }
    }
    std::cout.flush();
  }

  const GlobalOptions& global_;
  CLI::App* app_ = nullptr;
  std::string profile_name_;
  std::vector<std::string> only_, skip_;
  std::string json_path_, textfile_, emf_target_;
  std::string emf_namespace_ = "SMDDP/Preflight";
  bool print_drain_ = false, drain_ = false, verbose_ = false;
  std::string model_path_, golden_path_;
  double model_tolerance_pct_ = 25;
  PreflightSetup setup_;
};

}  // namespace

std::unique_ptr<Command> make_preflight_command(CLI::App& parent, const GlobalOptions& global) {
  return std::make_unique<PreflightCommand>(parent, global);
}

}  // namespace smddp::diag
