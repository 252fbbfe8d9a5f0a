// smddp-diag's command line (diag/src/cli.cc, the parser main() uses), then
// the chosen subcommand's validate(), which checks every value before any
// work: each input ends in a command, an exit code or a UsageError. One
// argument per line. Left out: preflight's --emf (validate opens the sink:
// a file or a connection) and anything run() does. The target runs in a
// scratch directory, as validate() probes output paths; stdout is closed.

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <string>

#include "argv.h"
#include "cli.h"
#include "fuzz_check.h"
#include "smddp/error.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  smddp::fuzz::enter_scratch_directory("diag");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  smddp::fuzz::Argv args("smddp-diag", std::string_view(reinterpret_cast<const char*>(data), size));
  smddp::diag::CommandLine command_line;
  int exit_code = -1;
  smddp::diag::Command* selected = command_line.parse(args.argc(), args.argv(), &exit_code);
  if (!selected) {
    FUZZ_CHECK(exit_code == 0 || exit_code == 64);
    return 0;
  }
  if (selected->app()->get_name() == "preflight" && selected->app()->count("--emf") > 0) return 0;
  try {
    selected->validate();
  } catch (const smddp::UsageError&) {
  }
  return 0;
}
