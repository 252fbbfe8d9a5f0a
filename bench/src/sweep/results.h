// What a sweep produces: one RowResult per (size, backend, placement), and
// the context reporters print around them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <utility>
#include <string>
#include <vector>

#include "sweep/bitwise.h"
#include "sweep/fabric_deltas.h"
#include "supervision/hang_report.h"
#include "cli/options.h"

namespace smddp::bench {

// Over the per-iteration times of a row (after -K's skipped iterations):
// percentiles as nccl-tests takes them (p50 the upper median, the others
// nearest-rank), standard deviation over all samples, cv = stdev / mean.
struct IterationStats {
  double min_us = 0, p50_us = 0, p95_us = 0, p99_us = 0, max_us = 0, mean_us = 0, stdev_us = 0, cv = 0;
};

struct Straggler {
  int rank = -1;
  std::string host;
  double slower_pct = 0;  // against the median rank
};

// --model: this row's prediction (model_baseline.h), or why there is none.
struct RowModel {
  double predicted_us = 0, predicted_busbw_gbps = 0;
  double deviation_pct = 0;  // (measured - predicted) / predicted
  bool flagged = false;      // |deviation| above --model-tolerance
  std::string error;         // no prediction: why (then the figures are 0)
};

// Split groups (NCCL_TESTS_SPLIT): one group's part of a row, as that group
// alone would report it: its time by -a over its own ranks, its size and
// its bandwidth over its own rank count, its wrong elements.
struct GroupResult {
  int group = 0;  // the colour (nccl-tests' "Group")
  int nranks = 0;
  size_t bytes = 0, count = 0;
  double time_us = 0, algbw_gbps = 0, busbw_gbps = 0;
  uint64_t wrong = 0;
};

// -B/--bitwise: a row's comparisons (sweep/bitwise.h), on rank 0.
struct RowBitwise {
  int repeats = 0;
  RankAgreement ranks = RankAgreement::None;  // which outputs must agree across ranks
  // Differing elements of repeat 1 against the expected value (also #wrong)
  // and of repeats 2..N against repeat 1 on the same rank, every rank; and
  // the (rank, repeat) outputs unlike the one the rank's group agrees on.
  uint64_t against_expected = 0, against_first_repeat = 0, against_ranks = 0;
  uint64_t differences() const { return against_expected + against_first_repeat + against_ranks; }
  std::vector<BitDifference> shown;  // the first kBitwiseShown, by rank, repeat, element
  // The engine's call number of each repeat on rank 0 (SMDDP_TEST_FLIP's
  // CALL); empty for backends not on the engine.
  std::vector<uint64_t> engine_calls;
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
  // --per-iteration (-I 1), on rank 0: each timed iteration's time on every
  // rank (rank_times_us[rank][i]) and its slowest rank's (iter_times_us[i]).
  std::vector<double> iter_times_us;
  std::vector<std::vector<double>> rank_times_us;
  int skipped_iterations = 0;  // -K: leading iterations left out of `stats`
  std::optional<Straggler> straggler;
  RowFabricCounters fabric_counters;  // rank 0: the row's counter deltas, every host
  std::optional<RowModel> model;      // --model
  // Split groups, on rank 0: each group's part, by colour. The row's own
  // figures aggregate them as nccl-tests does: time by -a over every rank
  // of every group, bandwidth over the size of rank 0's group, #wrong summed.
  std::vector<GroupResult> groups;
  std::optional<RowBitwise> bitwise;  // -B, rows with data
};

// A row as one split group alone would report it (--per-group tables, the
// metrics' group series): the group's size, time, bandwidth and wrong
// elements; per-iteration figures, the model's, the fabric counters and -B's
// differences belong to the whole job.
inline RowResult group_row(const RowResult& r, const GroupResult& g) {
  RowResult out = r;
  out.bytes = g.bytes;
  out.count = g.count;
  out.time_us = g.time_us;
  out.algbw_gbps = g.algbw_gbps;
  out.busbw_gbps = g.busbw_gbps;
  out.wrong = g.wrong;
  out.stats.reset();
  out.model.reset();
  out.fabric_counters = {};
  out.bitwise.reset();  // -B's differences are counted once, with the whole row
  return out;
}

// The slowest group of a row (the longest time; the lowest colour of a
// tie), and how much slower than the fastest, in percent; null for fewer
// than two groups.
struct SlowestGroup {
  const GroupResult* group = nullptr;
  int fastest = 0;  // its colour
  double slower_pct = 0;
};
SlowestGroup slowest_group(const RowResult& r);

struct RunContext {
  const BenchOptions* options = nullptr;
  int nranks = 1, nnodes = 1;
  std::vector<std::string> hosts;  // by rank
  std::vector<int> nodes;          // by rank
  std::vector<int> pids;           // by rank (empty when unknown)
  // Split groups (NCCL_TESTS_SPLIT): each rank's group (colour), by rank;
  // empty without a split (every rank in group 0).
  std::vector<int> groups;
  int group_of(int rank) const { return groups.empty() ? 0 : groups[static_cast<size_t>(rank)]; }
  // The colours in use, ascending, with their ranks (ascending): {{0, {0..n-1}}} without a split.
  std::vector<std::pair<int, std::vector<int>>> group_members() const;
  std::map<std::string, std::string> environment;
  std::map<std::string, std::string> versions;
  double memory_bandwidth_gbps = 0;  // --roofline
  std::string transport = "none";    // between nodes (Communicator::network_transport)
  std::string started_utc;
  size_t planned_rows = 0;
};

struct Summary {
  uint64_t wrong = 0;
  uint64_t bitwise_differences = 0;  // -B: RowBitwise::differences() summed
  std::map<std::string, double> avg_busbw_gbps;  // by backend
  double threshold_gbps = 0;
  bool below_threshold = false;
  std::vector<std::string> below_baseline;  // --baseline: the rows that fell below it
  bool baseline_judged_nothing = false;     // --baseline matched no row: the gate fails (exit 2)
  // --model: rows with a prediction, and the flagged ones ("label: ... us, predicted ... us (+N %)").
  size_t model_predicted = 0, model_unpredicted = 0;
  std::vector<std::string> model_flagged;
  int exit_code = 0;
  std::string error;  // set when the run ended early
  std::string timed_out_collective;
  std::optional<HangReport> hang;  // where the ranks stood when the run timed out
  bool complete = false;
};

IterationStats compute_stats(std::vector<double> times_us);

// Average bus bandwidth the way nccl-tests reports it: the mean of every
// row's busbw, both placements, per collective (its own section, as one
// *_perf binary) and per backend. A barrier moves no bytes: its rows are not
// counted, so it never lowers an average or fails --min-busbw.
class BusbwAverages {
 public:
  void add(const RowResult& r);
  // Over one collective's rows, or (collective empty) over all rows.
  std::optional<double> average(const std::string& backend, std::optional<Collective> collective = {}) const;

 private:
  struct Sum {
    double total = 0;
    size_t n = 0;
  };
  std::map<std::pair<int, std::string>, Sum> by_collective_;  // (collective, backend)
  std::map<std::string, Sum> by_backend_;
};

// True when --min-busbw (or NCCL_TESTS_MIN_BW) is set and `avg` is below it.
bool below_min_busbw(double avg, const BenchOptions& o);
// "OK"/"FAILED" against the minimum, "" when none is set (nccl-tests' footer).
std::string_view busbw_verdict(std::optional<double> avg, const BenchOptions& o);

// The nccl-tests binary that runs a collective (all_reduce_perf, ...); ours
// without one (barrier) get a name of the same shape.
std::string nccl_tests_program(Collective c);

}  // namespace smddp::bench
