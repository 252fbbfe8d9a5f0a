// The measured rows smddp-model fits and checks: smddp-bench -J documents
// (docs/bench.md, JSON), their flat `rows` with the job's shape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// Reads every file; UsageError naming the file for one that cannot be read,
// is not an smddp-bench document or has hosts with different rank counts.
Loaded load_results(const std::vector<std::string>& paths);

}  // namespace smddp::model
