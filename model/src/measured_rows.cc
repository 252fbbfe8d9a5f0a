#include "measured_rows.h"

#include <algorithm>

#include "smddp/error.h"
#include "smddp/model/cost_model.h"
#include "smddp/results/model_baseline.h"
#include "smddp/results/rows.h"
#include "smddp/schedule.h"

namespace smddp::model {

Loaded load_results(const std::vector<std::string>& paths, const schedule::Options& options) {
  Loaded out;
  for (const std::string& path : paths) {
    for (const results::ResultRow& r : results::read_result_file(path)) {
      const auto c = parse_collective(r.collective);
      const auto dt = parse_dtype(r.dtype);
      bool known = false;
      if (c) {
        const auto names = schedule::algorithms(*c);
        known = std::find(names.begin(), names.end(), r.algorithm) != names.end();
      }
      const double time_us = results::measured_time_us(r).value_or(-1);
      // The schedules are out of place; in place some algorithms skip a copy.
      if (r.backend != "smddp" || r.placement == "in-place" || !c || !dt || !known || r.wrong.value_or(0) > 0 ||
          time_us <= 0) {
        ++out.skipped;
        continue;
      }
      // A row it keeps needs the one shape the schedules take.
      if (r.ranks < 1 || r.hosts < 1) throw UsageError(path + ": no `nranks`/`nnodes`");
      if (r.uneven_hosts) throw UsageError(path + ": nodes have different rank counts; the model needs the same on every node");
      if (r.ranks % r.hosts) {
        throw UsageError(path + ": " + std::to_string(r.ranks) + " ranks do not split evenly over " + std::to_string(r.hosts) +
                         " nodes");
      }
      if (const std::string why = scale_problem(r.hosts, r.ranks / r.hosts, r.bytes, options); !why.empty()) {
        throw UsageError(path + ": row " + std::to_string(r.index) + ": " + why);
      }
      Row row;
      row.file = path;
      row.row = r.index;
      row.collective = *c;
      row.algorithm = r.algorithm;
      row.bytes = r.bytes;
      row.dtype_size = dtype_size(*dt);
      row.hosts = r.hosts;
      row.ranks_per_host = r.ranks / r.hosts;
      row.time_us = time_us;
      out.rows.push_back(std::move(row));
    }
  }
  return out;
}

}  // namespace smddp::model
