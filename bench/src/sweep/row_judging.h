// A measured row as the baseline gates and the cost model read it: the
// translation from smddp-bench's RowResult to smddp::results' ResultRow, and
// --model's prediction, deviation and flag (docs/model.md, "Using the model
// as a baseline").
#pragma once

#include "cli/options.h"
#include "smddp/results/model_baseline.h"
#include "sweep/results.h"

namespace smddp::bench {

results::ResultRow result_row(const RowResult& r, const RunContext& ctx, MemoryKind mem);
// --model: the row's prediction, its deviation and flag; counted in the summary.
void attach_model(RowResult& r, const results::ModelBaseline& m, const RunContext& ctx, MemoryKind mem, Summary& summary);

}  // namespace smddp::bench
