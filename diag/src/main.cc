// smddp-diag: topology, fabric probes, preflight health checks and a node
// exporter. Exit codes (smddp/tools/exit_codes.h): 0 ok, 1 unhealthy, 3 timeout,
// lost peer or transport failure, 64 usage, 69 unavailable, 70 other runtime failure.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <vector>

#include "commands.h"
#include "preflight/cluster.h"
#include "smddp/config.h"
#include "smddp/tools/exit_codes.h"
#include "smddp/error.h"
#include "smddp/version.h"

namespace {

int usage_error(const std::string& what) {
  std::cerr << "smddp-diag: " << what << "\n";
  return smddp::tools::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace smddp::diag;
  namespace tools = smddp::tools;
  CLI::App app{"smddp-diag: topology, fabric probes, preflight health checks and a node exporter", "smddp-diag"};
  app.require_subcommand(1);
  app.fallthrough();
  app.set_version_flag("--version", std::string(smddp::kVersion));
  GlobalOptions global;
  bool list_config = false, markdown = false;
  app.add_flag("--list-config", list_config, "List the SMDDP_* settings (value, default or environment) and exit");
  app.add_flag("--markdown", markdown, "With --list-config: every setting as a Markdown table");
  app.add_option("--sysfs-root", global.sysfs_root,
                 "Read /sys and /proc under this directory (tests; default SMDDP_SYSFS_ROOT or /)");
  app.add_option("--nvml-library", global.nvml_library,
                 "NVML library to load (default SMDDP_NVML_LIBRARY or libnvidia-ml.so.1)");

  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(make_topo_command(app, global));
  commands.push_back(make_fabric_command(app, global));
  commands.push_back(make_preflight_command(app, global));
  commands.push_back(make_exporter_command(app, global));
  commands.push_back(make_isolate_command(app, global));
  commands.push_back(make_baseline_command(app, global));

  // SMDDP_DIAG_FAULT is checked by its own parser, with the others.
  smddp::config::add_check("SMDDP_DIAG_FAULT", [](const std::string&) { Faults::from_env(); });
  constexpr unsigned kUsers = smddp::config::kEngine | smddp::config::kDiag;
  // --list-config needs no subcommand: handled before the parser demands one.
  for (int i = 1; i < argc; ++i) list_config = list_config || std::string(argv[i]) == "--list-config";
  if (list_config) {
    for (int i = 1; i < argc; ++i) markdown = markdown || std::string(argv[i]) == "--markdown";
    smddp::config::print(stdout, kUsers, markdown);
    std::fflush(stdout);
    smddp::config::check_or_exit("smddp-diag", kUsers);
    return 0;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (what.empty() || what.find("subcommand") != std::string::npos) {
      what = "a subcommand is required: topo, fabric, preflight, exporter, isolate or baseline";
      for (int i = 1; i < argc; ++i) {
        if (argv[i][0] != '-') {
          what = std::string("unknown subcommand '") + argv[i] + "': use topo, fabric, preflight, exporter, isolate or baseline";
          break;
        }
      }
    }
    return usage_error(what + " (see smddp-diag --help)");
  }

  // Before any subcommand touches MPI or the engine: one line from rank 0, 64.
  smddp::config::check_or_exit("smddp-diag", kUsers);

  Command* selected = nullptr;
  for (auto& c : commands) {
    if (c->app()->parsed()) selected = c.get();
  }
  if (!selected) return usage_error("a subcommand is required: topo, fabric, preflight, exporter, isolate or baseline");
  try {
    selected->validate();
  } catch (const smddp::UsageError& e) {
    return usage_error(e.what());
  } catch (const std::exception& e) {
    std::cerr << "smddp-diag: " << e.what() << "\n";
    return tools::exit_code_for(e);
  }
  try {
    return selected->run();
  } catch (const smddp::UsageError& e) {
    return usage_error(e.what());
  } catch (const std::exception& e) {
    // The same failure ends smddp-bench with the same code.
    std::cerr << "smddp-diag " << selected->app()->get_name() << ": " << e.what() << "\n";
    return tools::exit_code_for(e);
  }
}
