// A measured row as the baseline gates and the cost model read it: the
// translation from smddp-bench's RowResult to baseline.h's ResultRow, and
// --model's prediction, deviation and flag (docs/model.md, "Using the model
// as a baseline").
#pragma once

#include "model_baseline.h"
#include "cli/options.h"
#include "sweep/results.h"

namespace smddp::bench {

ResultRow result_row(const RowResult& r, const RunContext& ctx, MemoryKind mem);
// --model: the row's prediction, its deviation and flag; counted in the summary.
void attach_model(RowResult& r, const ModelBaseline& m, const RunContext& ctx, MemoryKind mem, Summary& summary);

}  // namespace smddp::bench
