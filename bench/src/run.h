#pragma once

#include "options.h"

namespace smddp::bench {

inline constexpr int kExitOk = 0;
inline constexpr int kExitWrong = 1;
inline constexpr int kExitBelowThreshold = 2;
inline constexpr int kExitTimeout = 3;
inline constexpr int kExitRuntime = 4;
inline constexpr int kExitUsage = 64;

// Parses and validates argv without starting MPI. Returns an exit code when
// the command is done (--help, --version, --list-algorithms), else -1.
// Throws UsageError.
int parse_command_line(int argc, char** argv, BenchOptions& options);

// Starts MPI, runs the sweep, reports; returns the exit code.
int run_benchmark(const BenchOptions& options);

}  // namespace smddp::bench
