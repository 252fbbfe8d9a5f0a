#pragma once

#include "cli/options.h"
#include "smddp/tools/exit_codes.h"

namespace smddp::bench {

// The shared table (smddp/tools/exit_codes.h), under bench's names.
inline constexpr int kExitOk = tools::kExitOk;
inline constexpr int kExitWrong = tools::kExitFailed;
inline constexpr int kExitBelowThreshold = tools::kExitBelowThreshold;
inline constexpr int kExitTimeout = tools::kExitLost;
inline constexpr int kExitRuntime = tools::kExitRuntime;
inline constexpr int kExitUsage = tools::kExitUsage;

// Parses and validates argv without starting MPI. Returns an exit code when
// the command is done (--help, --version, --list-algorithms), else -1.
// Throws UsageError.
int parse_command_line(int argc, char** argv, BenchOptions& options);

// Starts MPI, runs the sweep, reports; returns the exit code.
int run_benchmark(const BenchOptions& options);

}  // namespace smddp::bench
