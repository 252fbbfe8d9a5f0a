// The report of an isolate run, real (isolate_command.cc) or simulated
// (simulator.h): preflight's report with check `isolate` per node, and the
// JSON's `isolate` object (rounds, tests, limits, counters). One writer, so
// a simulated run's document reads like a real one.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "isolate/verdict.h"
#include "preflight/report.h"
#include "shared/counter_watch.h"

namespace smddp::diag {

struct IsolateRun {
  const RoundSchedule* schedule = nullptr;
  std::vector<std::string> labels;          // per node
  std::vector<std::vector<int>> ranks_of;   // per node
  int ranks = 0;
  std::string profile = "isolate";
  std::vector<std::optional<CounterDeltas>> counters;  // per node; empty: none watched
  double round_bound_s = 0;
  IsolateLimits limits;
  uint64_t seed = 1;
  int racks = 1;  // distinct racks of the pairing
};

PreflightReport isolate_report(const IsolateRun& run);
// The report's JSON with the `isolate` object.
nlohmann::json isolate_json(const PreflightReport& report, const IsolateRun& run);

}  // namespace smddp::diag
