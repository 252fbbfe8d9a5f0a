#include "smddp/results/model_baseline.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "smddp/error.h"
#include "smddp/tools/input_file.h"
#include "smddp/schedule.h"
#include "smddp/traits.h"

namespace smddp::results {

RowPrediction predict_row(const model::Model& m, const ResultRow& row) {
  RowPrediction p;
  auto none = [&](std::string why) {
    p.error = std::move(why);
    return p;
  };
  // The model is of smddp's host algorithms: an mpi:ring row's "ring" is Open MPI's.
  if (!row.backend.empty() && row.backend != "smddp") return none("backend " + row.backend + ": the model covers smddp's algorithms only");
  const auto c = parse_collective(row.collective);
  if (!c) return none("unknown collective '" + row.collective + "'");
  const auto dt = parse_dtype(row.dtype);
  if (!dt) return none("unknown dtype '" + row.dtype + "'");
  const std::string algorithm = row.algorithm.empty() ? "auto" : row.algorithm;
  const auto names = schedule::algorithms(*c);
  if (algorithm != "auto" && std::find(names.begin(), names.end(), algorithm) == names.end()) {
    return none("algorithm '" + algorithm + "' has no schedule for " + row.collective);
  }
  if (row.ranks < 1 || row.hosts < 1) return none("the row names no ranks or hosts");
  if (row.uneven_hosts || row.ranks % row.hosts) return none("uneven ranks per host: the model needs the same count on every host");
  // Bounded like smddp-model's own schedules (docs/model.md#bounds).
  if (std::string why = model::scale_problem(row.hosts, row.ranks / row.hosts, row.bytes, m.options); !why.empty()) {
    return none(why);
  }
  const schedule::Topology topo{row.hosts, row.ranks / row.hosts};
  schedule::Schedule s;
  try {
    s = schedule::make(*c, algorithm, topo, row.bytes, dtype_size(*dt), m.options);
  } catch (const UsageError& e) {
    return none(e.what());
  }
  if (!s.declined.empty()) return none(s.algorithm + " declines this call: " + s.declined);
  const auto missing = model::undetermined_tiers(m, s);
  if (!missing.empty()) return none("the model has no data for the " + missing.front() + " tier");
  p.ok = true;
  p.algorithm = s.algorithm;
  p.time_us = model::predict_us(m, s);
  // The one busbw definition (smddp/traits.h), as the rows' own.
  p.busbw_gbps = p.time_us > 0 ? static_cast<double>(row.bytes) / (p.time_us * 1e3) * traits(*c).bus_factor(row.ranks) : 0;
  return p;
}

bool is_model_file(const std::string& path) {
  const auto text = tools::try_read_input_file(path);
  if (!text) return false;
  const size_t first = text->find_first_not_of(" \t\r\n");
  if (first == std::string::npos || (*text)[first] != '{') return false;  // a JSON object starts with '{'
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object()) return false;
  const auto format = j.find("format");  // j.value() would throw on a format that is not a string
  return format != j.end() && format->is_string() && format->get<std::string>() == "smddp-model";
}

ModelBaseline load_model_baseline(const std::string& path, const std::string& flag, double tolerance) {
  const std::string origin = flag + " '" + path + "'";
  const nlohmann::json j = nlohmann::json::parse(tools::read_input_file(path, origin), nullptr, false);
  if (j.is_discarded()) throw UsageError(origin + ": not valid JSON (an smddp-model file)");
  ModelBaseline b;
  b.origin = path;
  b.model = model::from_json(j, origin);  // UsageError naming the field
  b.tolerance = tolerance;
  return b;
}

ModelGateResult gate_rows(const ModelBaseline& b, const std::vector<ResultRow>& rows) {
  ModelGateResult out;
  for (const auto& row : rows) {
    if (!row.busbw_gbps) continue;
    const RowPrediction p = predict_row(b.model, row);
    if (!p.ok) {
      out.unpredicted.push_back(row.label() + ": " + p.error);
      continue;
    }
    ++out.judged;
    char where[256];
    std::snprintf(where, sizeof where, "%s: %s predicted %.2f us", b.origin.c_str(), p.algorithm.c_str(), p.time_us);
    if (auto f = judge_row(row, p.busbw_gbps, b.tolerance, where)) out.failures.push_back(std::move(*f));
  }
  return out;
}

std::optional<double> measured_time_us(const ResultRow& row) { return row.p50_us ? row.p50_us : row.time_us; }

double deviation_pct(double measured_us, double predicted_us) {
  return predicted_us > 0 ? (measured_us - predicted_us) / predicted_us * 100 : 0;
}

}  // namespace smddp::results
