// fit and check: measured rows through their schedules.
#include <fmt/format.h>
#include <fstream>
#include <ostream>
#include <sstream>

#include "smddp/error.h"
#include "smddp/tools/atomic_file.h"
#include "smddp/tools/paths.h"
#include "verbs.h"

namespace smddp::model {
namespace {

std::vector<Row> in_range(const Loaded& l, const SizeRange& r) {
  std::vector<Row> out;
  for (const Row& row : l.rows) {
    if (r.contains(row.bytes)) out.push_back(row);
  }
  return out;
}

std::string row_label(const Row& r) {
  return fmt::format("{}:{} {} {} {}x{} {}B", r.file, r.row, to_string(r.collective), r.algorithm, r.hosts,
                     r.ranks_per_host, r.bytes);
}

}  // namespace

void print_tiers(const Model& m, std::ostream& out) {
  for (Tier t : {Tier::Shm, Tier::Network}) {
    const TierParams& tp = m.tier(t);
    out << schedule::to_string(t) << ":";
    if (!tp.any_data()) {
      out << " undetermined: no row uses this tier" << (t == Tier::Network ? " (no multi-host rows)" : "") << "\n";
      continue;
    }
    for (int p = 0; p < kParams; ++p) out << fmt::format(" {}={:.6g}", kParamNames[p], tp.value[p]);
    if (tp.value[1] > 0) out << fmt::format(" ({:.3f} GB/s)", 1e-3 / tp.value[1]);
    out << "\n";
    for (int p = 0; p < kParams; ++p) {
      if (!tp.determined[p]) out << "  " << kParamNames[p] << " undetermined: " << tp.note[p] << "\n";
    }
  }
}

int run_fit(const FitOptions& o, std::ostream& shown) {
  // Printed once the model is written: a refused -o (a FIFO no process
  // reads) is then the only output.
  std::ostringstream out;
  if (o.output.empty()) throw UsageError("fit: -o MODEL.json is required");
  tools::check_writable(o.output, "-o");
  const Loaded loaded = load_results(o.results, o.schedule);
  const std::vector<Row> rows = in_range(loaded, o.sizes);
  FitResult f = fit(rows, o.schedule);
  out << fmt::format("{:>12} {:>12} {:>8} {:>6}  row\n", "measured_us", "predicted_us", "error%", "weight");
  for (const Residual& r : f.residuals) {
    out << fmt::format("{:>12.2f} {:>12.2f} {:>8.1f} {:>6.2f}  {}\n", r.row->time_us, r.predicted_us, r.error_pct,
                       r.weight, row_label(*r.row));
  }
  out << fmt::format("rows: {} fitted, {} declined by their topology, {} skipped (in place, other backends, "
                     "unknown algorithms, wrong values), {} outside -b/-e\n",
                     f.residuals.size(), f.declined, loaded.skipped, loaded.rows.size() - rows.size());
  print_tiers(f.model, out);
  const double mae = median_abs_error(f.residuals);
  f.model.fit_info = {{"rows", f.residuals.size()}, {"files", o.results}, {"median_abs_error_pct", mae},
                      {"loss", "huber on log(predicted/measured), 1.345 MAD"}};
  tools::write_atomically(o.output, to_json(f.model).dump(2) + "\n");
  out << fmt::format("median abs error: {:.1f}%\n", mae);
  shown << out.str();
  return 0;
}

int run_check(const CheckOptions& o, std::ostream& out) {
  const Model m = load(o.model);
  const Loaded loaded = load_results(o.results, m.options);
  const std::vector<Row> rows = in_range(loaded, o.sizes);
  std::vector<Residual> rs;
  out << fmt::format("{:>12} {:>12} {:>8}  row\n", "measured_us", "predicted_us", "error%");
  for (const Row& r : rows) {
    const auto s = schedule::make(r.collective, r.algorithm, {r.hosts, r.ranks_per_host}, r.bytes, r.dtype_size,
                                  m.options);
    if (!s.declined.empty()) continue;
    const double pred = predict_us(m, s);
    rs.push_back({&r, pred, (pred - r.time_us) / r.time_us * 100, 1});
    out << fmt::format("{:>12.2f} {:>12.2f} {:>8.1f}  {}", r.time_us, pred, rs.back().error_pct, row_label(r));
    for (const auto& t : undetermined_tiers(m, s)) out << " (no " << t << " data in the model)";
    out << "\n";
  }
  if (rs.empty()) throw UsageError("check: no row to check in the results (within -b/-e)");
  out << fmt::format("median abs error: {:.1f}%\n", median_abs_error(rs));
  return 0;
}

}  // namespace smddp::model
