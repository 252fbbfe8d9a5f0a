// A cost model (smddp-model's JSON, docs/model.md) as the expected figures of
// a result row: the predicted time and bus bandwidth of the algorithm that
// ran, at the row's size and shape, or why there is none. smddp-bench uses it
// for --model (predicted next to measured) and --baseline MODEL.json (the
// gate); smddp-diag can reuse it (it links this library).
#pragma once

#include <string>
#include <vector>

#include "baseline.h"
#include "model.h"

namespace smddp::bench {

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
// others are counted in `unpredicted` with their reasons.
struct ModelGateResult : GateResult {
  std::vector<std::string> unpredicted;  // "label: reason"
};
ModelGateResult gate_rows(const ModelBaseline& b, const std::vector<ResultRow>& rows);

// (measured - predicted) / predicted, in percent: above 0 the row ran slower.
double deviation_pct(double measured_us, double predicted_us);

}  // namespace smddp::bench
