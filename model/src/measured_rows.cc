#include "results.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "smddp/error.h"
#include "smddp/schedule.h"

namespace smddp::model {
namespace {

// Ranks per host from the document's `ranks` (rank, host, node); nranks /
// nnodes when it is absent.
int ranks_per_host(const nlohmann::json& doc, const std::string& path, int nranks, int nnodes) {
  if (!doc.contains("ranks") || !doc["ranks"].is_array() || doc["ranks"].empty()) {
    if (nranks % nnodes) throw UsageError(path + ": " + std::to_string(nranks) + " ranks do not split evenly over " +
                                          std::to_string(nnodes) + " nodes");
    return nranks / nnodes;
  }
  std::map<int, int> per_node;
  for (const auto& r : doc["ranks"]) {
    if (!r.is_object() || !r.contains("node") || !r["node"].is_number_integer()) {
      throw UsageError(path + ": a `ranks` entry has no integer node");
    }
    ++per_node[r["node"].get<int>()];
  }
  const int k = per_node.begin()->second;
  for (const auto& [node, n] : per_node) {
    if (n != k) throw UsageError(path + ": nodes have different rank counts; the model needs the same on every node");
  }
  return k;
}

double row_time(const nlohmann::json& r) {
  if (r.contains("per_iteration") && r["per_iteration"].is_object()) {
    const auto& p = r["per_iteration"];
    if (p.contains("p50_us") && p["p50_us"].is_number()) return p["p50_us"].get<double>();
  }
  return r.contains("time_us") && r["time_us"].is_number() ? r["time_us"].get<double>() : -1;
}

}  // namespace

Loaded load_results(const std::vector<std::string>& paths) {
  Loaded out;
  for (const std::string& path : paths) {
    std::ifstream in(path);
    if (!in) throw UsageError(path + ": cannot read");
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception&) {
      throw UsageError(path + ": not valid JSON");
    }
    if (!doc.is_object() || !doc.contains("rows") || !doc["rows"].is_array()) {
      throw UsageError(path + ": not an smddp-bench -J document (no `rows`)");
    }
    const int nranks = doc.value("nranks", 0), nnodes = doc.value("nnodes", 0);
    if (nranks < 1 || nnodes < 1) throw UsageError(path + ": no `nranks`/`nnodes`");
    const int k = ranks_per_host(doc, path, nranks, nnodes);
    for (const auto& r : doc["rows"]) {
      if (!r.is_object()) throw UsageError(path + ": a row is not an object");
      Row row;
      row.file = path;
      row.row = r.value("row", 0);
      row.hosts = nnodes;
      row.ranks_per_host = k;
      const auto c = parse_collective(r.value("collective", ""));
      const auto dt = parse_dtype(r.value("dtype", ""));
      row.algorithm = r.value("algorithm", "");
      row.time_us = row_time(r);
      const bool wrong = r.contains("wrong") && r["wrong"].is_number() && r["wrong"].get<double>() > 0;
      bool known = false;
      if (c) {
        const auto names = schedule::algorithms(*c);
        known = std::find(names.begin(), names.end(), row.algorithm) != names.end();
      }
      // The schedules are out of place; in place some algorithms skip a copy.
      const bool in_place = r.value("placement", "") == "in-place";
      if (r.value("backend", "") != "smddp" || in_place || !c || !dt || !known || wrong || row.time_us <= 0 ||
          !r.contains("bytes") || !r["bytes"].is_number_unsigned()) {
        ++out.skipped;
        continue;
      }
      row.collective = *c;
      row.dtype_size = dtype_size(*dt);
      row.bytes = r["bytes"].get<uint64_t>();
      out.rows.push_back(std::move(row));
    }
  }
  return out;
}

}  // namespace smddp::model
