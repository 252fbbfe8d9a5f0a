#include "smddp/results/baseline.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "smddp/common/sizes.h"
#include "smddp/common/strings.h"
#include "smddp/error.h"
#include "smddp/tools/input_file.h"
#include "smddp/types.h"

namespace smddp::results {
namespace {

[[noreturn]] void fail(const std::string& origin, const YAML::Node& at, const std::string& what) {
  if (at.IsDefined() && at.Mark().line >= 0) throw UsageError("baseline '" + origin + "': line " + std::to_string(at.Mark().line + 1) + ": " + what);
  throw UsageError("baseline '" + origin + "': " + what);
}

double number(const std::string& origin, const YAML::Node& n, const std::string& key, double min) {
  if (!n.IsScalar()) fail(origin, n, key + ": expected a number");
  double v = 0;
  try {
    v = n.as<double>();
  } catch (const YAML::Exception&) {
    fail(origin, n, key + ": expected a number, got '" + n.Scalar() + "'");
  }
  if (!std::isfinite(v) || v < min) fail(origin, n, key + ": must be a number >= " + std::to_string(min) + ", got '" + n.Scalar() + "'");
  return v;
}

// A whole number in [min, max]: a double cast to int beyond its range is undefined.
int integer(const std::string& origin, const YAML::Node& n, const std::string& key, int min, int max) {
  const double v = number(origin, n, key, min);
  if (v > max || v != std::floor(v)) {
    fail(origin, n, key + ": expected a whole number " + std::to_string(min) + ".." + std::to_string(max) + ", got '" + n.Scalar() + "'");
  }
  return static_cast<int>(v);
}

uint64_t size(const std::string& origin, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) fail(origin, n, key + ": expected a size like 1MiB");
  std::string why;
  auto v = common::parse_size(n.Scalar(), &why);
  if (!v) fail(origin, n, key + ": expected " + std::string(common::kSizeExamples) + ", got '" + n.Scalar() + "' (" + why + ")");
  return *v;
}

// Ranks and hosts of one job: far above any real one, far below int's end.
constexpr int kMaxCount = 1 << 24;

const std::set<std::string> kEntryKeys = {"collective", "dtype", "backend", "memory", "bytes", "min_bytes", "max_bytes", "ranks",
                                          "hosts", "min_hosts", "busbw_gbps", "tolerance", "spread_gbps", "samples"};

}  // namespace

Baseline parse_baseline_section(const YAML::Node& section, const std::string& origin) {
  Baseline b;
  b.origin = origin;
  if (!section.IsMap()) fail(origin, section, "baseline: expected a mapping with tolerance and entries");
  for (const auto& kv : section) {
    const std::string key = kv.first.as<std::string>();
    if (key == "tolerance") {
      b.tolerance = number(origin, kv.second, "baseline.tolerance", 0);
      if (b.tolerance >= 1) fail(origin, kv.second, "baseline.tolerance: a fraction below 1 (0.25: 25 % below passes)");
    } else if (key != "entries") {
      fail(origin, kv.first, "baseline: unknown key '" + key + "' (expected tolerance, entries)");
    }
  }
  const YAML::Node entries = section["entries"];
  if (!entries || !entries.IsSequence()) fail(origin, section, "baseline.entries: expected a list");
  int number_of_entry = 0;
  for (const auto& n : entries) {
    const std::string entry = "entry " + std::to_string(++number_of_entry) + ": ";
    if (!n.IsMap()) fail(origin, n, "baseline.entries: each entry is a mapping");
    BaselineEntry e;
    e.line = n.Mark().line + 1;
    for (const auto& kv : n) {
      const std::string key = kv.first.as<std::string>();
      if (!kEntryKeys.count(key)) {
        fail(origin, kv.first, "baseline entry: unknown key '" + key + "' (known: collective, dtype, backend, memory, bytes, "
                               "min_bytes, max_bytes, ranks, hosts, min_hosts, busbw_gbps, tolerance, spread_gbps, samples)");
      }
    }
    if (!n["collective"] || !n["collective"].IsScalar()) fail(origin, n, "baseline entry: 'collective' is required");
    // Names are checked against the engine's tables: a misspelled one would
    // match no row, and the gate would pass without judging anything.
    for (auto [key, field] : {std::pair{"collective", &e.collective}, {"dtype", &e.dtype}, {"backend", &e.backend},
                              {"memory", &e.memory}}) {
      if (!n[key]) continue;
      if (!n[key].IsScalar()) fail(origin, n[key], entry + key + ": expected a string");
      const std::string& value = n[key].Scalar();
      if (std::string why = unknown_name(key, value); !why.empty()) fail(origin, n[key], entry + why);
      *field = key == std::string("collective") ? canonical_collective(value)
               : key == std::string("dtype")    ? canonical_dtype(value)
                                                : value;
    }
    if (n["bytes"]) e.min_bytes = e.max_bytes = size(origin, n["bytes"], "bytes");
    if (n["min_bytes"]) e.min_bytes = size(origin, n["min_bytes"], "min_bytes");
    if (n["max_bytes"]) e.max_bytes = size(origin, n["max_bytes"], "max_bytes");
    if (e.min_bytes > e.max_bytes) fail(origin, n, "baseline entry: min_bytes is above max_bytes");
    if (n["ranks"]) e.ranks = integer(origin, n["ranks"], "ranks", 1, kMaxCount);
    if (n["hosts"]) e.hosts = integer(origin, n["hosts"], "hosts", 1, kMaxCount);
    if (n["min_hosts"]) e.min_hosts = integer(origin, n["min_hosts"], "min_hosts", 1, kMaxCount);
    if (!n["busbw_gbps"]) fail(origin, n, "baseline entry: 'busbw_gbps' is required");
    e.busbw_gbps = number(origin, n["busbw_gbps"], "busbw_gbps", 0);
    if (n["tolerance"]) {
      e.tolerance = number(origin, n["tolerance"], "tolerance", 0);
      if (e.tolerance >= 1) fail(origin, n["tolerance"], "tolerance: a fraction below 1");
    }
    if (n["spread_gbps"]) e.spread_gbps = number(origin, n["spread_gbps"], "spread_gbps", 0);
    if (n["samples"]) e.samples = integer(origin, n["samples"], "samples", 0, std::numeric_limits<int>::max());
    b.entries.push_back(std::move(e));
  }
  return b;
}

Baseline load_baseline(const std::string& path) {
  const std::string text = tools::read_input_file(path, "--baseline '" + path + "'");
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw UsageError("baseline '" + path + "': line " + std::to_string(e.mark.line + 1) + ": malformed YAML: " + e.msg);
  }
  if (!root.IsMap() || !root["baseline"]) throw UsageError("baseline '" + path + "': no top-level 'baseline:' section");
  try {
    return parse_baseline_section(root["baseline"], path);
  } catch (const YAML::Exception& e) {
    throw UsageError("baseline '" + path + "': line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

const BaselineEntry* match_entry(const Baseline& b, const ResultRow& row) {
  const BaselineEntry* best = nullptr;
  auto specificity = [](const BaselineEntry& e) {
    return std::make_tuple(-static_cast<double>(e.max_bytes - e.min_bytes), (e.ranks > 0) + (e.hosts > 0) + !e.dtype.empty() +
                                                                                !e.backend.empty() + !e.memory.empty());
  };
  for (const auto& e : b.entries) {
    if (e.collective != row.collective) continue;
    if (!e.dtype.empty() && e.dtype != row.dtype) continue;
    if (!e.backend.empty() && e.backend != row.backend) continue;
    if (!e.memory.empty() && e.memory != row.memory) continue;
    if (row.bytes < e.min_bytes || row.bytes > e.max_bytes) continue;
    if (e.ranks && e.ranks != row.ranks) continue;
    if (e.hosts && e.hosts != row.hosts) continue;
    if (e.min_hosts && row.hosts < e.min_hosts) continue;
    if (!best || specificity(e) > specificity(*best)) best = &e;
  }
  return best;
}

bool could_judge_any(const Baseline& b, const std::vector<std::string>& collectives,
                     const std::vector<std::string>& dtypes, const std::vector<std::string>& backends,
                     const std::string& memory) {
  // An entry's empty field matches anything, as in match_entry.
  auto fits = [](const std::string& want, const std::vector<std::string>& have) {
    return want.empty() || std::find(have.begin(), have.end(), want) != have.end();
  };
  for (const auto& e : b.entries) {
    if (fits(e.collective, collectives) && fits(e.dtype, dtypes) && fits(e.backend, backends) &&
        (e.memory.empty() || e.memory == memory)) {
      return true;
    }
  }
  return false;
}

std::optional<GateFailure> judge_row(const ResultRow& row, double expected_gbps, double tolerance,
                                     const std::string& where) {
  const double limit = expected_gbps * (1 - tolerance);
  if (!row.busbw_gbps || *row.busbw_gbps >= limit) return std::nullopt;
  GateFailure f;
  f.row = row;
  f.expected_gbps = expected_gbps;
  f.limit_gbps = limit;
  char text[512];
  std::snprintf(text, sizeof text, "%s: busbw %.3f GB/s below %.3f GB/s (baseline %.3f GB/s less %.0f %%, %s)",
                row.label().c_str(), *row.busbw_gbps, limit, expected_gbps, tolerance * 100, where.c_str());
  f.text = text;
  return f;
}

GateResult gate_rows(const Baseline& b, const std::vector<ResultRow>& rows) {
  GateResult out;
  for (const auto& row : rows) {
    const BaselineEntry* e = row.busbw_gbps ? match_entry(b, row) : nullptr;
    if (!e) continue;
    ++out.judged;
    if (auto f = judge_row(row, e->busbw_gbps, b.tolerance_of(*e), b.origin + ":" + std::to_string(e->line))) {
      out.failures.push_back(std::move(*f));
    }
  }
  return out;
}

Baseline learn_baseline(const std::vector<ResultRow>& rows, double tolerance) {
  using Key = std::tuple<std::string, std::string, std::string, std::string, uint64_t, int, int>;
  std::map<Key, std::vector<double>> samples;
  for (const auto& r : rows) {
    if (r.busbw_gbps) samples[{r.collective, r.dtype, r.backend, r.memory, r.bytes, r.ranks, r.hosts}].push_back(*r.busbw_gbps);
  }
  Baseline b;
  b.tolerance = tolerance;
  for (auto& [k, v] : samples) {
    auto median = [](std::vector<double> x) {
      std::sort(x.begin(), x.end());
      return x.size() % 2 ? x[x.size() / 2] : (x[x.size() / 2 - 1] + x[x.size() / 2]) / 2;
    };
    BaselineEntry e;
    std::tie(e.collective, e.dtype, e.backend, e.memory, e.min_bytes, e.ranks, e.hosts) = k;
    e.max_bytes = e.min_bytes;
    e.busbw_gbps = median(v);
    std::vector<double> dev;
    for (double x : v) dev.push_back(std::fabs(x - e.busbw_gbps));
    e.spread_gbps = median(dev);
    e.samples = static_cast<int>(v.size());
    b.entries.push_back(std::move(e));
  }
  return b;
}

std::string baseline_to_yaml(const Baseline& b, const std::vector<std::string>& sources) {
  std::ostringstream out;
  out << "# Learned by smddp-diag baseline learn: the median bus bandwidth per row kind\n"
         "# over every run given, its spread (median absolute deviation) and sample count.\n# From:";
  for (const auto& s : sources) out << " " << s;
  out << "\nbaseline:\n  tolerance: " << b.tolerance << "\n  entries:\n";
  for (const auto& e : b.entries) {
    out << "    - {collective: " << e.collective;
    if (!e.dtype.empty()) out << ", dtype: " << e.dtype;
    if (!e.backend.empty()) out << ", backend: " << e.backend;
    if (!e.memory.empty()) out << ", memory: " << e.memory;
    out << ", bytes: " << e.min_bytes;
    if (e.ranks) out << ", ranks: " << e.ranks;
    if (e.hosts) out << ", hosts: " << e.hosts;
    char num[64];
    std::snprintf(num, sizeof num, "%.6g", e.busbw_gbps);
    out << ", busbw_gbps: " << num;
    std::snprintf(num, sizeof num, "%.6g", e.spread_gbps);
    out << ", spread_gbps: " << num << ", samples: " << e.samples << "}\n";
  }
  return out.str();
}

}  // namespace smddp::results
