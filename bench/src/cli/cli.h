// Builds the CLI11 parser for BenchOptions: nccl-tests 2.19's flags (short
// names, long names with underscores, last value wins) plus ours.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/options.h"

namespace smddp::bench {

// What CLI11 reads as text or raw numbers; finish_options checks and converts.
struct CliParts {
  std::vector<std::string> collectives{"allreduce"};
  std::string minbytes = "32M", maxbytes = "32M", stepbytes, stepfactor;
  std::string datatype = "float", op = "sum", backend = "smddp", mem = "host";
  std::string root = "0", seed, json_path, csv_path;
  bool json_given = false, csv_given = false, min_busbw_given = false;
  bool in_place = false, out_of_place = false, both = false;
  int average = 1;
  int per_iter_timing = -1;  // -I; -1: not given
  int bitwise = 0;           // -B, when bitwise_given
  bool bitwise_given = false;
  int report_cputime = 0, report_timestamps = 0;
  int cta_policy = -1, device_impl = 0, device_cta_count = 16;
  std::string model_path;                                  // --model
  double baseline_tolerance = -1, model_tolerance = -1;    // percent; -1: not given (25)
};

void add_bench_options(CLI::App& app, BenchOptions& o, CliParts& parts);
// Turns the parsed strings into validated options; throws UsageError.
void finish_options(BenchOptions& o, const CliParts& parts);

// The sizes of the sweep, or UsageError when it cannot grow from -b to -e
// or would have more rows than anyone means to run.
std::vector<size_t> checked_sweep_sizes(const BenchOptions& o);

}  // namespace smddp::bench
