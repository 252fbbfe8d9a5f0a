// Builds the CLI11 parser for BenchOptions.
#pragma once

#include <CLI/CLI.hpp>

#include "options.h"

namespace smddp::bench {

struct CliParts {
  std::vector<std::string> collectives{"allreduce"};
  std::string minbytes = "32M", maxbytes = "32M", stepbytes;
  std::string datatype = "float", op = "sum", backend = "smddp", mem = "host";
  bool in_place = false, out_of_place = false, both = false;
  int average = 1;
};

void add_bench_options(CLI::App& app, BenchOptions& o, CliParts& parts);
// Turns the parsed strings into validated options; throws UsageError.
void finish_options(BenchOptions& o, const CliParts& parts);

}  // namespace smddp::bench
