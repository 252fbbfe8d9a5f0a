// smddp-diag: topology, fabric probes, preflight health checks and a node
// exporter. Exit codes (smddp/tools/exit_codes.h): 0 ok, 1 unhealthy, 3 timeout,
// lost peer or transport failure, 64 usage, 69 unavailable, 70 other runtime failure.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli.h"
#include "smddp/error.h"
#include "smddp/tools/exit_codes.h"

int main(int argc, char** argv) {
  using namespace smddp::diag;
  namespace tools = smddp::tools;
  CommandLine command_line;
  int exit_code = 0;
  Command* selected = command_line.parse(argc, argv, &exit_code);
  if (!selected) return exit_code;
  try {
    selected->validate();
  } catch (const smddp::UsageError& e) {
    return usage_error(e.what());
  } catch (const std::exception& e) {
    std::cerr << "smddp-diag: " << tools::error_text(e) << "\n";
    return tools::exit_code_for(e);
  }
  try {
    return selected->run();
  } catch (const smddp::UsageError& e) {
    return usage_error(e.what());
  } catch (const std::exception& e) {
    // The same failure ends smddp-bench with the same code.
    std::cerr << "smddp-diag " << selected->app()->get_name() << ": " << tools::error_text(e) << "\n";
    return tools::exit_code_for(e);
  }
}
