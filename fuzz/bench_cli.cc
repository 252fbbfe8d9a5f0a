// smddp-bench's command line, through its entry point parse_command_line
// (bench/src/sweep/run.cc: CLI11, then cli.cc's finish_options): every input ends
// in a return code or a UsageError, never in another exception or a crash.
// One argument per line. Output paths are only probed (check_writable), so
// the target runs in a scratch directory; stdout (--help, --list-*) is closed.

#include <cstdlib>
#include <string>

#include "argv.h"
#include "fuzz_check.h"
#include "sweep/run.h"
#include "smddp/error.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  smddp::fuzz::enter_scratch_directory("bench");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  smddp::fuzz::Argv args("smddp-bench", std::string_view(reinterpret_cast<const char*>(data), size));
  smddp::bench::BenchOptions options;
  try {
    const int rc = smddp::bench::parse_command_line(args.argc(), args.argv(), options);
    if (rc < 0) {  // accepted: the sweep is valid
      FUZZ_CHECK(!options.collectives.empty() && !options.dtypes.empty() && !options.backends.empty());
      FUZZ_CHECK(options.min_bytes <= options.max_bytes && options.iters >= 1);
    }
  } catch (const smddp::UsageError&) {
  }
  return 0;
}
