// smddp-bench command line: nccl-tests' flags and names, plus ours.
// Everything here is validated before MPI starts or memory is allocated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/alltoallv_matrix.h"
#include "cli/split_groups.h"
#include "smddp/results/baseline.h"
#include "smddp/results/model_baseline.h"
#include "smddp/telemetry/metrics.h"
#include "smddp/types.h"

namespace smddp::bench {

enum class Placement { OutOfPlace, InPlace, Both };
enum class Average { Rank0 = 0, Mean = 1, Min = 2, Max = 3 };

struct BenchOptions {
  std::vector<Collective> collectives{Collective::AllReduce};
  size_t min_bytes = 32 * 1024 * 1024;
  size_t max_bytes = 32 * 1024 * 1024;
  double step_factor = 1;             // -f: multiply when > 1 (then step_bytes is 0)
  size_t step_bytes = size_t{1} << 20;  // -i: added per row when step_factor is not above 1
  int iters = 20;
  int warmup = 5;
  int check = 1;  // nccl-tests -c: check correctness (iterations of checking)
  // -B/--bitwise N: each checked row N times on identical inputs, compared bit
  // for bit (sweep/bitwise.h); replaces -c's checking calls. 0: off.
  int bitwise = 0;
  int cuda_graph_launches = 0;  // nccl-tests -G: timed iterations as one CUDA graph, launched N times
  std::vector<DataType> dtypes{DataType::Float32};
  std::vector<ReduceOp> ops{ReduceOp::Sum};
  int root = 0;         // -r; with all_roots, ignored
  bool all_roots = false;  // -r -1 (nccl-tests): every rank in turn is the root, one row per root
  Average average = Average::Mean;
  double timeout = 0;  // -T seconds; 0 = no per-test timeout: the engine's (SMDDP_TIMEOUT or 300) applies
  std::string json_path;
  std::string csv_path;
  std::vector<std::string> backends{"smddp"};
  std::string algorithm = "auto";
  std::string transport = "auto";  // between nodes: mpi, fabric, socket or auto
  std::string provider;            // libfabric provider; empty: engine default
  MemoryKind mem = MemoryKind::Host;
  Placement placement = Placement::Both;
  bool per_iteration = false;
  bool list_algorithms = false;
  bool explain = false;  // with --list-algorithms: the selection table this job would use
  bool list_config = false;
  bool markdown = false;  // --list-config as README.md's table
  bool quiet = false;
  bool progress = false;  // the progress line even when the launch's output is redirected
  bool version = false;
  double min_busbw = 0;  // GB/s: below it the run fails (exit 2); 0 = no threshold
  // A threshold was set (--min-busbw, or NCCL_TESTS_MIN_BW when --min-busbw is not given),
  // even 0: the "# Avg bus bandwidth" line then ends in OK or FAILED. From NCCL_TESTS_MIN_BW=X,
  // min_busbw is 0.9 * X, the bound nccl-tests compares against.
  bool min_busbw_set = false;
  std::string baseline_path;  // --baseline FILE
  results::Baseline baseline;  // its entries, loaded while the options are checked
  // --baseline MODEL.json: a cost model as the baseline (its rows' predicted
  // busbw less --baseline-tolerance, default 25 %); then `baseline` is empty.
  std::optional<results::ModelBaseline> baseline_model;
  // --model MODEL.json: the predicted time beside each row; rows off by more
  // than --model-tolerance (either way, default 25 %) are flagged.
  std::optional<results::ModelBaseline> model;
  bool roofline = false;
  bool huge_pages = false;  // --huge-pages: host buffers on transparent huge pages
  uint64_t seed = 0x5eedULL;
  std::string alltoallv_matrix;  // --alltoallv-matrix FILE
  // Its weights, else NCCL_TESTS_ALLTOALLV_* (nccl-tests' spread or byte
  // matrix), else the default weights (alltoallv_matrix.h).
  AlltoallvPattern alltoallv;
  // NCCL_TESTS_SPLIT / NCCL_TESTS_SPLIT_MASK: split groups (split_groups.h).
  std::optional<SplitRule> split;
  bool per_group = false;  // --per-group: one table per split group besides the aggregate
  telemetry::MetricsOptions metrics;

  // nccl-tests 2.19 flags (docs/bench.md#nccl-tests-compatibility).
  int nthreads = 1;  // -t/--nthreads: always 1 (one rank per process; more are refused)
  int ngpus = 1;     // -g/--ngpus: always 1 (one device per rank; more are refused)
  // -m/--agg_iters: collectives issued back to back in each timed iteration; a
  // row's times are per collective (the iteration's time / agg_iters).
  int agg_iters = 1;
  int run_cycles = 1;  // -N/--run_cycles: sweeps in a row, each reported; 0 = until SIGINT/SIGTERM
  // -I/--per_iter_timing 1 sets per_iteration (above). -K/--per_iter_skip: the
  // first K timed iterations of a row stay out of the per-iteration statistics.
  int per_iter_skip = 0;
  bool report_cputime = false;     // -C/--report_cputime 1: the time columns are named cputime
  bool report_timestamps = false;  // -S/--report_timestamps 1: a timestamp column after in-place
  int unalign = 0;                 // -u/--unalign N: both buffers start N elements past their alignment
  // Accepted for compatibility; no effect on host memory (host collectives
  // block; one thread; nothing to register): -z, -y, -p, -R, -M, -x, -V.
  int blocking = 0, stream_null = 0, parallel_init = 0, local_register = 0, memory_report = 0;
  // -e as given when it did not fit in memory and max_bytes was lowered
  // ("# Reducing maxBytes to N due to memory limitation"); 0 = not lowered.
  size_t requested_max_bytes = 0;
  std::vector<std::string> argv;
};

// The sizes of the sweep, in bytes, before per-collective rounding: from
// min_bytes, times step_factor when step_bytes is 0, else plus step_bytes,
// up to max_bytes.
std::vector<size_t> sweep_sizes(const BenchOptions& o);

}  // namespace smddp::bench
