#include "shared/model_floor.h"

#include <fmt/format.h>

#include <cstdlib>

#include "shared/text.h"
#include "smddp/error.h"

namespace smddp::diag {

results::ModelBaseline load_model_option(const std::string& path, double tolerance_pct) {
  if (!(tolerance_pct >= 0 && tolerance_pct < 100)) throw UsageError("--model-tolerance must be a percentage in [0, 100)");
  if (path.empty()) throw UsageError("--model needs a file (smddp-model fit -o MODEL.json)");
  return results::load_model_baseline(path, "--model", tolerance_pct / 100);
}

ModelFloor model_allreduce_floor(const results::ModelBaseline& m, const std::string& algorithm, int hosts, int ranks_per_host,
                                 uint64_t bytes) {
  results::ResultRow row;
  row.collective = "allreduce";
  row.dtype = "float32";
  row.backend = "smddp";
  row.algorithm = algorithm == "auto" ? "" : algorithm;
  row.bytes = bytes;
  row.hosts = hosts;
  row.ranks = hosts * ranks_per_host;
  const results::RowPrediction p = results::predict_row(m.model, row);
  const std::string shape = fmt::format("{} hosts x {} rank{}, {}", hosts, ranks_per_host, ranks_per_host == 1 ? "" : "s",
                                        format_bytes(bytes));
  if (!p.ok) throw UsageError(fmt::format("--model '{}' cannot predict the allreduce of {}: {}", m.origin, shape, p.error));
  ModelFloor f;
  f.predicted_gbs = p.busbw_gbps;
  f.floor_gbs = p.busbw_gbps * (1 - m.tolerance);
  f.by = fmt::format("model {}: {} predicts {:.3f} GB/s for {}, less {:.0f} %", m.origin, p.algorithm, p.busbw_gbps, shape,
                     100 * m.tolerance);
  return f;
}

std::optional<int> launcher_ranks_per_node() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE", "MPI_LOCALNRANKS"}) {
    if (const char* v = std::getenv(name)) {
      char* end = nullptr;
      const long n = std::strtol(v, &end, 10);
      if (end != v && *end == '\0' && n >= 1) return static_cast<int>(n);
    }
  }
  return std::nullopt;
}

}  // namespace smddp::diag
