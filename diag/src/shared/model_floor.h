// A cost model (smddp-model's JSON, --model) as the expected allreduce bus
// bandwidth of isolate's pair tests and preflight's cluster allreduce: the
// model's prediction for the test's shape, less a tolerance, becomes the
// floor, and the failure message names the model and its prediction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "smddp/results/model_baseline.h"

namespace smddp::diag {

struct ModelFloor {
  double predicted_gbs = 0, floor_gbs = 0;
  std::string by;  // "model M.json: ring predicts 6.667 GB/s for 2 hosts x 1 rank, 1 MiB, less 25 %"
};

// Reads --model (UsageError "--model 'path': ..." when it is missing or not
// a model) with --model-tolerance in percent, [0, 100).
results::ModelBaseline load_model_option(const std::string& path, double tolerance_pct);

// The floor for an allreduce of `bytes` float32 with `algorithm` ("auto":
// the default selector's) over `hosts` x `ranks_per_host`; UsageError
// "--model 'path' cannot predict ...: why" when the model cannot.
ModelFloor model_allreduce_floor(const results::ModelBaseline& m, const std::string& algorithm, int hosts, int ranks_per_host,
                                 uint64_t bytes);

// Ranks per node as the launcher tells it before MPI starts (Open MPI,
// Slurm); nullopt when it does not.
std::optional<int> launcher_ranks_per_node();

}  // namespace smddp::diag
