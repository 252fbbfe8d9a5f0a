#include "sweep/row_judging.h"

#include <cmath>
#include <cstdio>
#include <map>

namespace smddp::bench {

// The row as the baseline gates and the model read it (smddp/results/rows.h).
results::ResultRow result_row(const RowResult& r, const RunContext& ctx, MemoryKind mem) {
  results::ResultRow row;
  row.collective = to_string(r.collective);
  row.dtype = to_string(r.dtype);
  row.backend = r.backend;
  row.memory = to_string(mem);
  row.bytes = r.bytes;
  row.ranks = ctx.nranks;
  row.hosts = ctx.nnodes;
  row.busbw_gbps = r.busbw_gbps;
  row.time_us = r.time_us;
  if (r.stats) row.p50_us = r.stats->p50_us;
  if (r.checked) row.wrong = r.wrong;
  row.index = static_cast<int>(r.row);
  row.placement = r.in_place ? "in-place" : "out-of-place";
  row.algorithm = r.algorithm;
  std::map<int, int> per_node;
  for (int n : ctx.nodes) ++per_node[n];
  for (const auto& [node, n] : per_node) row.uneven_hosts |= n != per_node.begin()->second;
  return row;
}

void attach_model(RowResult& r, const results::ModelBaseline& m, const RunContext& ctx, MemoryKind mem, Summary& summary) {
  const results::ResultRow row = result_row(r, ctx, mem);
  const results::RowPrediction p = results::predict_row(m.model, row);
  RowModel rm;
  if (!p.ok) {
    rm.error = p.error;
    ++summary.model_unpredicted;
  } else {
    rm.predicted_us = p.time_us;
    rm.predicted_busbw_gbps = p.busbw_gbps;
    const double measured = *results::measured_time_us(row);  // as smddp-model fits
    rm.deviation_pct = results::deviation_pct(measured, p.time_us);
    rm.flagged = std::fabs(rm.deviation_pct) > m.tolerance * 100;
    ++summary.model_predicted;
    if (rm.flagged) {
      char text[512];
      std::snprintf(text, sizeof text, "%s: %.2f us, predicted %.2f us (%+.0f %%)", row.label().c_str(), measured,
                    p.time_us, rm.deviation_pct);
      summary.model_flagged.emplace_back(text);
    }
  }
  r.model = rm;
}

}  // namespace smddp::bench
