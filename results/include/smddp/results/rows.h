// The one reader of result files: smddp-bench's -J document (its flat `rows`)
// and nccl-tests 2.19's -J document (`results`, both placements), as rows of
// one schema. docs/bench.md, "JSON", describes both documents; every smddp
// tool that reads results (smddp-bench --baseline, smddp-diag baseline learn,
// smddp-model fit and check) reads them through here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace smddp::results {

// The most ranks a results file may name (its nranks, nnodes, a row's ranks
// or hosts, nccl-tests' devices x nthreads x ngpus); more is refused as malformed.
inline constexpr int kMaxRanks = 1 << 20;

// One measured row: one size, dtype, backend and placement of one run.
// Names are the engine's (collective "allreduce", dtype "float"), whatever
// spelling the file used ("all_reduce_perf", "float32").
struct ResultRow {
  std::string origin;  // the file (or document) it came from, for messages
  int index = -1;      // smddp-bench's `row`; nccl-tests: the result's position
  std::string collective, dtype, backend, memory;
  uint64_t bytes = 0;
  int ranks = 0, hosts = 0;
  bool uneven_hosts = false;  // hosts ran different rank counts (smddp-bench's `ranks`)
  std::string placement;      // in-place / out-of-place
  std::string algorithm;      // the one that ran (smddp-bench rows); empty: unknown, the default selector's ("auto")
  // Absent where the file does not say.
  std::optional<double> busbw_gbps;
  std::optional<double> time_us;  // the row's time per call (nccl-tests: time or cpu_time)
  std::optional<double> p50_us;   // the median per-iteration time (-I 1)
  std::optional<uint64_t> wrong;  // wrong values; absent when the run did not check
  std::string label() const;      // "allreduce float32 1048576 B (smddp, out-of-place, 4 ranks, 2 hosts)"
};

// Every row of one results document; `origin` names it in messages.
// UsageError when it is neither format or a row is malformed.
std::vector<ResultRow> read_result_rows(const nlohmann::json& doc, const std::string& origin);
// The same from a file; UsageError "results 'PATH': ..." when it cannot be
// read or is not JSON.
std::vector<ResultRow> read_result_file(const std::string& path);

// Row names of every spelling as the engine prints them: "all_reduce_perf",
// "reduce_scatter" -> "allreduce", "reducescatter"; "float32", "fp16" ->
// "float", "half". Baseline entries use them too, so entries and rows match.
std::string canonical_collective(std::string name);
std::string canonical_dtype(const std::string& name);

// The backends a row, a baseline entry or smddp-bench --backend may name.
inline constexpr const char* kBackendChoices = "smddp, mpi, mpi:ALGORITHM (e.g. mpi:ring), nccl";
bool is_backend_name(const std::string& name);

// "" when `value` is a name the engine knows for `key` ("collective", "dtype"
// and "op" in any spelling the tools accept, through the engine's parsers
// over its traits and type tables; "memory"; "backend"), else
// "unknown collective 'allreduc'; valid: allreduce, allgather, ...".
std::string unknown_name(const std::string& key, const std::string& value);

}  // namespace smddp::results
