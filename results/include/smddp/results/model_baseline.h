// A cost model (smddp-model's JSON, docs/model.md) as the expected figures of
// a result row: the predicted time and bus bandwidth of the algorithm that
// ran, at the row's size and shape, or why there is none. smddp-bench uses it
// for --model (predicted next to measured) and --baseline MODEL.json (the
// gate), smddp-diag for isolate's and preflight's --model floor. The model
// itself (parameters, prediction over a schedule, its file) is smddp-model's
// library smddp::cost_model, which this one links.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "smddp/model/cost_model.h"
#include "smddp/results/baseline.h"

namespace smddp::results {

struct RowPrediction {
  bool ok = false;
  std::string algorithm;  // the schedule's ("auto" resolved)
  double time_us = 0, busbw_gbps = 0;
  std::string error;      // !ok: why ("backend mpi: ...", "no data for the network tier", ...)
};

// The prediction for `row`: its collective, algorithm (empty: "auto", the
// default selector's choice), dtype, bytes, ranks and hosts. None for rows
// of other backends, unknown algorithms, uneven ranks per host, schedules
// that decline the shape, or tiers the model has no data for.
RowPrediction predict_row(const model::Model& m, const ResultRow& row);

// A model read for --baseline or --model, with the tolerance it is judged by.
struct ModelBaseline {
  std::string origin;      // the file, for messages
  model::Model model;
  double tolerance = 0.25;  // a fraction: --baseline: below (1 - t) x predicted busbw fails
};

// True when `path` holds an smddp-model document ("format": "smddp-model"),
// so --baseline reads it as a model and not as a YAML baseline.
bool is_model_file(const std::string& path);
// Reads and checks the model; UsageError "FLAG 'path': ..." otherwise.
ModelBaseline load_model_baseline(const std::string& path, const std::string& flag, double tolerance);

// The --baseline gate against a model: every row with a prediction is
// judged (judge_row, the same wording as a YAML baseline's failures); the
// others are counted in `unpredicted` with their reasons. Rows without a bus
// bandwidth are not judged.
struct ModelGateResult : GateResult {
  std::vector<std::string> unpredicted;  // "label: reason"
};
ModelGateResult gate_rows(const ModelBaseline& b, const std::vector<ResultRow>& rows);

// The time a row is compared with its prediction by, and fitted by
// (smddp-model fit): the per-iteration median where there is one (-I 1),
// which one preempted call does not move, else the row's time.
std::optional<double> measured_time_us(const ResultRow& row);

// (measured - predicted) / predicted, in percent: above 0 the row ran slower.
double deviation_pct(double measured_us, double predicted_us);

}  // namespace smddp::results
