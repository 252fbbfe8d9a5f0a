// predict: every algorithm at every size of the sweep, the best one per
// size, the crossovers, and the selector's tuning file (selector.h's
// format: <collective> <single|multi> <max_bytes|inf> <names>).
#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "smddp/error.h"
#include "smddp/tools/atomic_file.h"
#include "smddp/tools/paths.h"
#include "smddp/traits.h"
#include "verbs.h"

namespace smddp::model {

double busbw_gbps(Collective c, int nranks, uint64_t bytes, double time_us) {
  if (time_us <= 0) return 0;
  return static_cast<double>(bytes) / (time_us * 1e3) * traits(c).bus_factor(nranks);
}

std::vector<Collective> parse_collectives(const std::vector<std::string>& names) {
  std::vector<Collective> out;
  for (const auto& n : names) {
    const auto c = parse_collective(n);
    if (!c) throw UsageError("unknown collective '" + n + "'");
    out.push_back(*c);
  }
  if (out.empty()) out.push_back(Collective::AllReduce);
  return out;
}

std::vector<Prediction> predict_all(const Model& m, Collective c, const schedule::Topology& t, uint64_t bytes,
                                    size_t dtype_size) {
  std::vector<Prediction> out;
  for (const std::string& name : schedule::algorithms(c)) {
    const auto s = schedule::make(c, name, t, bytes, dtype_size, m.options);
    if (!s.declined.empty()) continue;
    const double us = predict_us(m, s);
    out.push_back({name, us, busbw_gbps(c, t.ranks(), bytes, us)});
  }
  return out;
}

namespace {

std::string size_text(uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) return fmt::format("{}G", b >> 30);
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return fmt::format("{}M", b >> 20);
  if (b >= (1ull << 10) && b % (1ull << 10) == 0) return fmt::format("{}K", b >> 10);
  return fmt::format("{}", b);
}

struct SizeResult {
  uint64_t bytes;
  std::vector<Prediction> all;  // fastest first
};

}  // namespace

int run_predict(const PredictOptions& o, std::ostream& shown) {
  // Printed once the tuning file is written: a refused one (a FIFO no
  // process reads) is then the only output.
  std::ostringstream out;
  if (o.hosts < 1 || o.ranks_per_host < 1) throw UsageError("--hosts and --ranks-per-host must be >= 1");
  if (o.min_bytes > o.max_bytes) throw UsageError("-b must not exceed -e");
  if (o.factor < 2) throw UsageError("-f must be >= 2");
  const auto dt = parse_dtype(o.dtype);
  if (!dt) throw UsageError("unknown dtype '" + o.dtype + "'");
  const auto colls = parse_collectives(o.collectives);
  const Model m = load(o.model);
  // Bounded before any schedule is drawn (docs/model.md#bounds).
  if (const std::string why = scale_problem(o.hosts, o.ranks_per_host, o.max_bytes, m.options); !why.empty()) {
    throw UsageError("predict --hosts " + std::to_string(o.hosts) + " --ranks-per-host " +
                     std::to_string(o.ranks_per_host) + " -e " + std::to_string(o.max_bytes) + ": " + why);
  }
  tools::check_writable(o.tuning_file, "--tuning-file");  // "" passes: no file
  const schedule::Topology topo{o.hosts, o.ranks_per_host};
  const bool multi = o.hosts > 1;

  nlohmann::json doc = {{"hosts", o.hosts}, {"ranks_per_host", o.ranks_per_host}, {"dtype", to_string(*dt)},
                        {"collectives", nlohmann::json::array()}};
  std::string tuning = fmt::format("# smddp-model predict --hosts {} --ranks-per-host {} ({})\n", o.hosts,
                                   o.ranks_per_host, o.model);
  std::vector<std::string> missing;
  for (Collective c : colls) {
    std::vector<SizeResult> sizes;
    for (uint64_t b = std::max<uint64_t>(o.min_bytes, 1);; b *= o.factor) {
      SizeResult r{b, predict_all(m, c, topo, b, dtype_size(*dt))};
      std::stable_sort(r.all.begin(), r.all.end(), [](const auto& x, const auto& y) { return x.time_us < y.time_us; });
      sizes.push_back(std::move(r));
      if (b > o.max_bytes / o.factor) break;
    }
    if (sizes.empty() || sizes.front().all.empty()) continue;
    for (const auto& name : schedule::algorithms(c)) {
      const auto s = schedule::make(c, name, topo, sizes.back().bytes, dtype_size(*dt), m.options);
      for (const auto& t : undetermined_tiers(m, s)) {
        if (std::find(missing.begin(), missing.end(), t) == missing.end()) missing.push_back(t);
      }
    }
    // Table: one column per algorithm, time and busbw, then the best.
    std::vector<std::string> names;
    for (const auto& p : sizes.front().all) names.push_back(p.algorithm);
    std::sort(names.begin(), names.end());
    std::string head = fmt::format("{:>10}", "size");
    for (const auto& n : names) head += fmt::format("  {:>26}", n + " us / GB/s");
    if (!o.json) out << "# " << to_string(c) << " on " << o.hosts << " hosts x " << o.ranks_per_host << " ranks\n"
                     << head << "  best\n";
    nlohmann::json jc = {{"collective", to_string(c)}, {"sizes", nlohmann::json::array()},
                         {"crossovers", nlohmann::json::array()}};
    for (const auto& r : sizes) {
      std::string line = fmt::format("{:>10}", size_text(r.bytes));
      nlohmann::json js = {{"bytes", r.bytes}, {"best", r.all.front().algorithm}, {"predictions", nlohmann::json::array()}};
      for (const auto& n : names) {
        auto it = std::find_if(r.all.begin(), r.all.end(), [&](const auto& p) { return p.algorithm == n; });
        line += it == r.all.end() ? fmt::format("  {:>26}", "-")
                                  : fmt::format("  {:>15.2f} / {:>8.3f}", it->time_us, it->busbw_gbps);
      }
      for (const auto& p : r.all) {
        js["predictions"].push_back({{"algorithm", p.algorithm}, {"time_us", p.time_us}, {"busbw_gbps", p.busbw_gbps}});
      }
      if (!o.json) out << line << "  " << r.all.front().algorithm << "\n";
      jc["sizes"].push_back(js);
    }
    // Crossovers, and the tuning rules: each run of one best algorithm up
    // to its last size, the last one to inf; candidates fastest first.
    std::string line = fmt::format("crossovers {}: {}", to_string(c), sizes.front().all.front().algorithm);
    for (size_t i = 0; i < sizes.size(); ++i) {
      const bool last = i + 1 == sizes.size();
      if (!last && sizes[i + 1].all.front().algorithm == sizes[i].all.front().algorithm) continue;
      std::string cands;
      for (const auto& p : sizes[i].all) cands += (cands.empty() ? "" : ",") + p.algorithm;
      tuning += fmt::format("{} {} {} {}\n", to_string(c), multi ? "multi" : "single",
                            last ? std::string("inf") : std::to_string(sizes[i].bytes), cands);
      if (!last) {
        const auto& to = sizes[i + 1].all.front().algorithm;
        line += fmt::format(" -> {} at {}", to, size_text(sizes[i + 1].bytes));
        jc["crossovers"].push_back({{"bytes", sizes[i + 1].bytes}, {"from", sizes[i].all.front().algorithm}, {"to", to}});
      }
    }
    if (!o.json) out << line << "\n\n";
    doc["collectives"].push_back(jc);
  }
  doc["undetermined_tiers"] = missing;
  if (o.json) {
    out << doc.dump(2) << "\n";
  } else {
    for (const auto& t : missing) out << "warning: the model has no data for the " << t << " tier; its terms count as 0\n";
  }
  // As every output file: whole or not at all, through a symbolic link, into a device or FIFO.
  if (!o.tuning_file.empty()) tools::write_atomically(o.tuning_file, tuning);
  shown << out.str();
  return 0;
}

}  // namespace smddp::model
