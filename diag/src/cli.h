// smddp-diag's command line: the global options and the subcommands,
// parsed without running anything, so that main() and the fuzzer
// (fuzz/diag_cli.cc) share one parser.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "commands.h"

namespace smddp::diag {

// "smddp-diag: <what>" on stderr; returns 64.
int usage_error(const std::string& what);

class CommandLine {
 public:
  CommandLine();
  ~CommandLine();
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  // The subcommand to validate and run, or nullptr with *exit_code: 0 after
  // --help, --version or --list-config (printed on stdout), 64 after one
  // usage line on stderr. A bad SMDDP_* setting exits 64 (config::check_or_exit).
  Command* parse(int argc, char** argv, int* exit_code);

 private:
  std::unique_ptr<CLI::App> app_;
  GlobalOptions global_;
  bool list_config_ = false, markdown_ = false;
  std::vector<std::unique_ptr<Command>> commands_;
};

}  // namespace smddp::diag
