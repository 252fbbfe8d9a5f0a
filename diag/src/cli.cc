#include "cli.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "isolate/topology.h"
#include "preflight/cluster.h"
#include "smddp/config.h"
#include "smddp/tools/cli_numbers.h"
#include "smddp/tools/exit_codes.h"
#include "smddp/version.h"

namespace smddp::diag {
namespace {

constexpr unsigned kUsers = config::kEngine | config::kDiag;

}  // namespace

int usage_error(const std::string& what) {
  // Under a launcher every rank finds the same bad input: rank 0 says it.
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    if (const char* r = std::getenv(var); r && std::string(r) != "0") {
      config::yield_to_reporting_rank();
      return tools::kExitUsage;
    }
  }
  std::cerr << "smddp-diag: " << what << "\n";
  return tools::kExitUsage;
}

CommandLine::CommandLine()
    : app_(std::make_unique<CLI::App>("smddp-diag: topology, fabric probes, preflight health checks, isolation of bad nodes, baselines, golden files, NCCL RAS queries and a node exporter",
                                      "smddp-diag")) {
  CLI::App& app = *app_;
  app.require_subcommand(1);
  app.fallthrough();
  app.set_version_flag("--version", std::string(kVersion));
  app.add_flag("--list-config", list_config_, "List the SMDDP_* settings (value, default or environment) and exit");
  app.add_flag("--markdown", markdown_, "With --list-config: every setting as a Markdown table");
  app.add_option("--sysfs-root", global_.sysfs_root,
                 "Read /sys and /proc under this directory (tests; default SMDDP_SYSFS_ROOT or /)");
  app.add_option("--nvml-library", global_.nvml_library,
                 "NVML library to load (default SMDDP_NVML_LIBRARY or libnvidia-ml.so.1)");
  commands_.push_back(make_topo_command(app, global_));
  commands_.push_back(make_fabric_command(app, global_));
  commands_.push_back(make_preflight_command(app, global_));
  commands_.push_back(make_exporter_command(app, global_));
  commands_.push_back(make_isolate_command(app, global_));
  commands_.push_back(make_baseline_command(app, global_));
  commands_.push_back(make_ras_command(app, global_));
  commands_.push_back(make_golden_command(app, global_));
  commands_.push_back(make_codes_command(app, global_));
  // Last: every numeric option of every subcommand, decimal only ("--timeout 0x10" is refused, not read as 16).
  tools::decimal_numbers_only(app);
  // SMDDP_DIAG_FAULT is checked by its own parser, with the others.
  config::add_check("SMDDP_DIAG_FAULT", [](const std::string&) { Faults::from_env(); });
  // So is the topology file's content, at start like a tuning file's, not first in isolate's rounds.
  config::add_check("SMDDP_ISOLATE_TOPOLOGY", [](const std::string& path) { load_topology(path, "SMDDP_ISOLATE_TOPOLOGY " + path); });
}

CommandLine::~CommandLine() = default;

Command* CommandLine::parse(int argc, char** argv, int* exit_code) {
  *exit_code = tools::kExitOk;
  // --list-config needs no subcommand: handled before the parser demands one.
  bool list_config = false, markdown = false;
  for (int i = 1; i < argc; ++i) list_config = list_config || std::string(argv[i]) == "--list-config";
  if (list_config) {
    for (int i = 1; i < argc; ++i) markdown = markdown || std::string(argv[i]) == "--markdown";
    config::print(stdout, kUsers, markdown);
    std::fflush(stdout);
    config::check_or_exit("smddp-diag", kUsers);
    return nullptr;
  }
  try {
    app_->parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    *exit_code = app_->exit(e);
    return nullptr;
  } catch (const CLI::CallForAllHelp& e) {
    *exit_code = app_->exit(e);
    return nullptr;
  } catch (const CLI::CallForVersion& e) {
    *exit_code = app_->exit(e);
    return nullptr;
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (what.empty() || what.find("subcommand") != std::string::npos) {
      what = "a subcommand is required: topo, fabric, preflight, exporter, isolate, baseline or golden";
      for (int i = 1; i < argc; ++i) {
        if (argv[i][0] != '-') {
          what = std::string("unknown subcommand '") + argv[i] + "': use topo, fabric, preflight, exporter, isolate, baseline or golden";
          break;
        }
      }
    }
    *exit_code = usage_error(what + " (see smddp-diag --help)");
    return nullptr;
  }

  // Before any subcommand touches MPI or the engine: one line from rank 0, 64.
  config::check_or_exit("smddp-diag", kUsers);

  for (auto& c : commands_) {
    if (c->app()->parsed()) return c.get();
  }
  *exit_code = usage_error("a subcommand is required: topo, fabric, preflight, exporter, isolate, baseline or golden");
  return nullptr;
}

}  // namespace smddp::diag
