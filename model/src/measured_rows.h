// The measured rows smddp-model fits and checks: result files read by the
// one reader (smddp/results/rows.h), kept where the model can use them:
// smddp's out-of-place rows of known algorithms with a time, in the shape
// (hosts x ranks per host) the schedules take.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "smddp/schedule.h"
#include "smddp/types.h"

namespace smddp::model {

struct Row {
  std::string file;
  int row = 0;               // the row's number in its file
  Collective collective{};
  std::string algorithm;
  uint64_t bytes = 0;
  size_t dtype_size = 0;
  int hosts = 1, ranks_per_host = 1;
  double time_us = 0;        // per-iteration median (p50), else the row's time
};

struct Loaded {
  std::vector<Row> rows;
  int skipped = 0;  // in-place rows, rows of other backends, unknown algorithms, wrong values or no time
};

// Reads every file; UsageError naming the file for one that cannot be read
// or is not a results document, and for a row it would keep that names no
// ranks and hosts or ran on hosts with different rank counts.
// A kept row beyond the schedules' bounds (scale_problem, with `options`)
// is refused the same way.
Loaded load_results(const std::vector<std::string>& paths, const schedule::Options& options);

}  // namespace smddp::model
