// smddp-bench command line: nccl-tests' flags and names, plus ours.
// Everything here is validated before MPI starts or memory is allocated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "baseline.h"
#include "smddp/telemetry/metrics.h"
#include "smddp/types.h"

namespace smddp::bench {

enum class Placement { OutOfPlace, InPlace, Both };
enum class Average { Rank0 = 0, Mean = 1, Min = 2, Max = 3 };

struct BenchOptions {
  std::vector<Collective> collectives{Collective::AllReduce};
  size_t min_bytes = 32 * 1024 * 1024;
  size_t max_bytes = 32 * 1024 * 1024;
  double step_factor = 2;
  size_t step_bytes = 0;  // additive steps when > 0 (nccl-tests -i)
  int iters = 20;
  int warmup = 5;
  int check = 1;  // nccl-tests -c: check correctness (iterations of checking)
  int cuda_graph_launches = 0;  // nccl-tests -G: timed iterations as one CUDA graph, launched N times
  std::vector<DataType> dtypes{DataType::Float32};
  std::vector<ReduceOp> ops{ReduceOp::Sum};
  int root = 0;
  Average average = Average::Mean;
  double timeout = 0;  // seconds; 0 = engine default
  std::string json_path;
  std::string csv_path;
  std::vector<std::string> backends{"smddp"};
  std::string algorithm = "auto";
  std::string transport = "auto";  // between nodes: mpi, fabric or auto
  std::string provider;            // libfabric provider; empty: engine default
  MemoryKind mem = MemoryKind::Host;
  Placement placement = Placement::Both;
  bool per_iteration = false;
  bool list_algorithms = false;
  bool list_config = false;
  bool markdown = false;  // --list-config as README.md's table
  bool quiet = false;
  bool progress = false;  // the progress line even when the launch's output is redirected
  bool version = false;
  double min_busbw = 0;  // GB/s; 0 = no threshold
  std::string baseline_path;  // --baseline FILE
  Baseline baseline;          // its entries, loaded while the options are checked
  bool roofline = false;
  uint64_t seed = 0x5eedULL;
  std::string alltoallv_matrix;            // --alltoallv-matrix FILE
  std::vector<uint64_t> alltoallv_weights;  // its n x n weights, row = sender (empty: default)
  telemetry::MetricsOptions metrics;
  std::vector<std::string> argv;
};

// The sizes of the sweep, in bytes, before per-collective rounding.
std::vector<size_t> sweep_sizes(const BenchOptions& o);

}  // namespace smddp::bench
