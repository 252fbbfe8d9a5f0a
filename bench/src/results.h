// What a sweep produces: one RowResult per (size, backend, placement), and
// the context reporters print around them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fabric_deltas.h"
#include "hang_report.h"
#include "options.h"

namespace smddp::bench {

struct IterationStats {
  double min_us = 0, p50_us = 0, p95_us = 0, p99_us = 0, max_us = 0, mean_us = 0, cv = 0;
};

struct Straggler {
  int rank = -1;
  std::string host;
  double slower_pct = 0;  // against the median rank
};

struct RowResult {
  size_t row = 0;  // index of the (size, dtype, op, collective) row, shared by backends
  Collective collective{};
  DataType dtype{};
  ReduceOp op{};
  int root = -1;  // -1 where the collective has none
  size_t bytes = 0, count = 0;
  std::string backend, algorithm;
  bool in_place = false;
  double time_us = 0, algbw_gbps = 0, busbw_gbps = 0;
  uint64_t wrong = 0;
  bool checked = false;
  uint64_t iterations = 0;
  double ratio = 1;           // first backend's busbw over this one's (time for barrier)
  double roof_fraction = -1;  // busbw over host memory bandwidth, when measured
  std::optional<IterationStats> stats;
  std::optional<Straggler> straggler;
  RowFabricCounters fabric_counters;  // rank 0: the row's counter deltas, every host
};

struct RunContext {
  const BenchOptions* options = nullptr;
  int nranks = 1, nnodes = 1;
  std::vector<std::string> hosts;  // by rank
  std::vector<int> nodes;          // by rank
  std::map<std::string, std::string> environment;
  std::map<std::string, std::string> versions;
  double memory_bandwidth_gbps = 0;  // --roofline
  std::string started_utc;
  size_t planned_rows = 0;
};

struct Summary {
  uint64_t wrong = 0;
  std::map<std::string, double> avg_busbw_gbps;  // by backend
  double threshold_gbps = 0;
  bool below_threshold = false;
  std::vector<std::string> below_baseline;  // --baseline: the rows that fell below it
  int exit_code = 0;
  std::string error;  // set when the run ended early
  std::string timed_out_collective;
  std::optional<HangReport> hang;  // where the ranks stood when the run timed out
  bool complete = false;
};

IterationStats compute_stats(std::vector<double> times_us);

}  // namespace smddp::bench
