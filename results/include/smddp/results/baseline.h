// Expected bus bandwidth per collective and size range, with a tolerance:
// the `baseline:` section of a preflight profile (figures derived from
// AWS's published numbers) or a file `smddp-diag baseline learn` wrote from
// earlier runs. smddp-bench --baseline fails the rows below it (exit 2);
// docs/diag.md, "Baselines", gives the format. Rows come from rows.h.
//
//   baseline:
//     tolerance: 0.25              # default for the entries: 25 % below passes
//     entries:
//       - {collective: allreduce, memory: cuda, min_hosts: 2, min_bytes: 256MiB, busbw_gbps: 40}
//       - {collective: allreduce, dtype: float32, bytes: 1MiB, ranks: 4, hosts: 2, busbw_gbps: 1.9,
//          spread_gbps: 0.05, samples: 6}
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "smddp/results/rows.h"

namespace YAML {
class Node;
}

namespace smddp::results {

struct BaselineEntry {
  // What a row must be to be judged by this entry (empty / 0: any).
  std::string collective, dtype, backend, memory;
  uint64_t min_bytes = 0, max_bytes = std::numeric_limits<uint64_t>::max();
  int ranks = 0, hosts = 0, min_hosts = 0;
  // What it must reach.
  double busbw_gbps = 0;
  double tolerance = -1;  // < 0: the file's
  // Learned entries: the spread (median absolute deviation) and sample count.
  double spread_gbps = 0;
  int samples = 0;
  int line = 0;  // in its file, for messages
};

struct Baseline {
  std::string origin;
  double tolerance = 0.25;
  std::vector<BaselineEntry> entries;
  double tolerance_of(const BaselineEntry& e) const { return e.tolerance >= 0 ? e.tolerance : tolerance; }
};

// The `baseline:` mapping (the node itself, not the document). UsageError
// naming origin, line and key for anything malformed.
Baseline parse_baseline_section(const YAML::Node& section, const std::string& origin);
// A file with a top-level `baseline:` (a profile or a learned baseline).
Baseline load_baseline(const std::string& path);

// The entry that judges `row`: the matching one with the narrowest size range
// and most fields given; nullptr when none matches.
const BaselineEntry* match_entry(const Baseline& b, const ResultRow& row);

// Whether some entry of `b` could judge a row of one of these collectives,
// dtypes, backends and this memory (the engine's names; sizes, ranks and
// hosts are known only once a run has them). smddp-bench refuses, before
// any work, a baseline none of whose entries could.
bool could_judge_any(const Baseline& b, const std::vector<std::string>& collectives,
                     const std::vector<std::string>& dtypes, const std::vector<std::string>& backends,
                     const std::string& memory);

struct GateFailure {
  ResultRow row;
  double expected_gbps = 0, limit_gbps = 0;
  std::string text;  // "allreduce float32 1 MiB ...: 0.5 GB/s below 1.5 GB/s (baseline 2.0 GB/s - 25 %, FILE:LINE)"
};
struct GateResult {
  int judged = 0;
  std::vector<GateFailure> failures;
};
// Rows without a bus bandwidth are not judged.
GateResult gate_rows(const Baseline& b, const std::vector<ResultRow>& rows);
// One row against an expected busbw less `tolerance` (a fraction); `where`
// names the expectation ("FILE:LINE", or a model and its prediction). The
// failure when the row is below, with gate_rows' wording; nullopt otherwise.
std::optional<GateFailure> judge_row(const ResultRow& row, double expected_gbps, double tolerance,
                                     const std::string& where);

// Median and spread of busbw per (collective, dtype, backend, memory, bytes,
// ranks, hosts) over all rows given (several runs, several nodes' files)
// that have a bus bandwidth.
Baseline learn_baseline(const std::vector<ResultRow>& rows, double tolerance);
// YAML text that load_baseline reads back; `sources` go into a comment.
std::string baseline_to_yaml(const Baseline& b, const std::vector<std::string>& sources);

}  // namespace smddp::results
