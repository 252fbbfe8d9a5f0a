#include "smddp/results/rows.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "smddp/common/strings.h"
#include "smddp/error.h"
#include "smddp/tools/input_file.h"
#include "smddp/types.h"

namespace smddp::results {
namespace {

// A row or entry that does not have the shape of its format.
struct Malformed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::optional<double> number_at(const nlohmann::json& obj, const char* key) {
  if (obj.is_object() && obj.contains(key) && obj[key].is_number()) return obj[key].get<double>();
  return std::nullopt;
}

// `wrong` / `nwrong`: a count, or null when the run did not check.
std::optional<uint64_t> wrong_at(const nlohmann::json& obj, const char* key) {
  const auto v = number_at(obj, key);
  if (!v || *v < 0) return std::nullopt;
  return static_cast<uint64_t>(*v);
}

uint64_t bytes_at(const nlohmann::json& r, const char* key) {
  if (!r.contains(key) || !r[key].is_number_integer() || (!r[key].is_number_unsigned() && r[key].get<int64_t>() < 0)) {
    throw Malformed(std::string("a row without a byte count '") + key + "'");
  }
  return r[key].get<uint64_t>();
}

// A rank or host count: an integer 0..kMaxRanks, `fallback` when absent.
// (A float or a huge number would otherwise be cast to int: 1e10 ranks
// becomes a negative or arbitrary count, and a false verdict.)
int count_at(const nlohmann::json& obj, const char* key, int fallback) {
  if (!obj.is_object() || !obj.contains(key)) return fallback;
  const auto& v = obj[key];
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0) || v.get<uint64_t>() > kMaxRanks) {
    throw Malformed(std::string("`") + key + "` must be an integer 0.." + std::to_string(kMaxRanks) + ", not " + v.dump());
  }
  return v.get<int>();
}

// smddp-bench: one object per row, the job's shape at the top.
void read_bench_rows(const nlohmann::json& doc, const std::string& origin, std::vector<ResultRow>& out) {
  const int ranks = count_at(doc, "nranks", 0), hosts = count_at(doc, "nnodes", 0);
  std::string memory;
  if (doc.contains("devices") && doc["devices"].is_object()) memory = doc["devices"].value("memory", "");
  // `ranks`: one entry per rank with its node; hosts of different sizes
  // have no one ranks-per-host (the cost model needs one).
  std::map<int, int> per_node;
  if (doc.contains("ranks") && doc["ranks"].is_array()) {
    for (const auto& e : doc["ranks"]) {
      if (!e.is_object() || !e.contains("node") || !e["node"].is_number_integer()) {
        throw Malformed("a `ranks` entry has no integer node");
      }
      ++per_node[e["node"].get<int>()];
    }
  }
  bool uneven = false;
  for (const auto& [node, n] : per_node) uneven |= n != per_node.begin()->second;
  for (const auto& r : doc["rows"]) {
    if (!r.is_object() || !r.contains("collective") || !r["collective"].is_string()) {
      throw Malformed("a row without a collective");
    }
    ResultRow row;
    row.origin = origin;
    // A label only: a `row` that is not a small integer is numbered by its place.
    const auto& n = r.contains("row") ? r["row"] : nlohmann::json();
    const bool small = n.is_number_integer() && n.get<int64_t>() >= 0 && n.get<int64_t>() <= INT32_MAX;
    row.index = small ? n.get<int>() : static_cast<int>(out.size());
    row.collective = canonical_collective(r["collective"].get<std::string>());
    row.dtype = canonical_dtype(r.value("dtype", ""));
    row.backend = r.value("backend", "");
    row.placement = r.value("placement", "");
    row.memory = r.value("memory", memory);
    row.bytes = bytes_at(r, "bytes");
    row.ranks = count_at(r, "ranks", ranks);
    row.hosts = count_at(r, "hosts", count_at(r, "nodes", hosts));
    row.uneven_hosts = uneven;
    row.algorithm = r.value("algorithm", "");
    row.busbw_gbps = number_at(r, "busbw_gbps");
    row.time_us = number_at(r, "time_us");
    if (r.contains("per_iteration")) row.p50_us = number_at(r["per_iteration"], "p50_us");
    row.wrong = wrong_at(r, "wrong");
    out.push_back(std::move(row));
  }
}

// nccl-tests 2.19 (-J FILE.json): `config.devices` holds one entry per
// process (each runs nthreads x ngpus ranks), `results` one object per size
// with its out_of_place and in_place bodies (null: not run). Its
// experiment_name is empty: the program (args[0], all_reduce_perf) names
// the collective. Our own -J document names it per result (`collective`).
void read_nccl_tests_results(const nlohmann::json& doc, const std::string& origin, std::vector<ResultRow>& out) {
  int ranks = 0;
  std::set<std::string> hostnames;
  if (doc.contains("config") && doc["config"].is_object()) {
    const auto& config = doc["config"];
    const int64_t per_process =
        int64_t{std::max(1, count_at(config, "nthreads", 1))} * std::max(1, count_at(config, "ngpus", 1));
    if (config.contains("devices") && config["devices"].is_array()) {
      for (const auto& d : config["devices"]) {
        if (ranks > kMaxRanks - per_process) {
          throw Malformed("`config.devices` make more than " + std::to_string(kMaxRanks) + " ranks");
        }
        ranks += static_cast<int>(per_process);
        if (d.is_object() && d.contains("hostname") && d["hostname"].is_string()) hostnames.insert(d["hostname"].get<std::string>());
      }
    }
  }
  std::string program;
  if (doc.contains("args") && doc["args"].is_array() && !doc["args"].empty() && doc["args"][0].is_string()) {
    program = doc["args"][0].get<std::string>();
    program = program.substr(program.find_last_of('/') + 1);
  }
  int index = 0;
  for (const auto& r : doc["results"]) {
    if (!r.is_object()) throw Malformed("a result is not an object");
    std::string collective = r.value("experiment_name", "");
    if (collective.empty()) collective = r.value("collective", "");
    if (collective.empty() && program.ends_with("_perf")) collective = program;
    if (collective.empty()) throw Malformed("a result names no collective (experiment_name, or a *_perf program in args)");
    for (const char* placement : {"out_of_place", "in_place"}) {
      if (!r.contains(placement) || !r[placement].is_object()) continue;  // not run
      const auto& body = r[placement];
      ResultRow row;
      row.origin = origin;
      row.index = index;
      row.collective = canonical_collective(collective);
      row.dtype = canonical_dtype(r.value("type", ""));
      row.backend = "nccl";
      row.memory = "cuda";
      row.placement = placement == std::string("in_place") ? "in-place" : "out-of-place";
      row.bytes = bytes_at(r, "size");
      row.ranks = ranks;
      row.hosts = static_cast<int>(hostnames.size());
      row.busbw_gbps = number_at(body, "bus_bw");
      row.time_us = number_at(body, "time");
      if (!row.time_us) row.time_us = number_at(body, "cpu_time");
      const std::string per_iter = std::string(placement) + "_per_iter";
      if (r.contains(per_iter)) row.p50_us = number_at(r[per_iter], "p50_us");
      row.wrong = wrong_at(body, "nwrong");
      out.push_back(std::move(row));
    }
    ++index;
  }
}

}  // namespace

std::string canonical_collective(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (s.size() > 5 && s.ends_with("_perf")) s.resize(s.size() - 5);
  s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return c == '_' || c == '-'; }), s.end());
  return s;
}

std::string canonical_dtype(const std::string& s) {
  const auto t = parse_dtype(s);
  return t ? std::string(to_string(*t)) : s;
}

bool is_backend_name(const std::string& name) {
  // mpi:ALGORITHM forces one of Open MPI's tuned algorithms; "mpi:" names none.
  return name == "smddp" || name == "nccl" || name == "mpi" || (name.starts_with("mpi:") && name.size() > 4);
}

std::string unknown_name(const std::string& key, const std::string& value) {
  std::vector<std::string> valid;
  bool known = false;
  if (key == "collective") {
    known = parse_collective(canonical_collective(value)).has_value();
    for (Collective c : all_collectives()) valid.emplace_back(to_string(c));
  } else if (key == "dtype") {
    known = parse_dtype(value).has_value();
    for (DataType t : all_dtypes()) valid.emplace_back(to_string(t));
  } else if (key == "op") {
    known = parse_op(value).has_value();
    for (ReduceOp op : all_ops()) valid.emplace_back(to_string(op));
  } else if (key == "memory") {
    known = parse_memory_kind(value).has_value();
    for (MemoryKind m : {MemoryKind::Host, MemoryKind::Cuda}) valid.emplace_back(to_string(m));
  } else if (key == "backend") {
    if (is_backend_name(value)) return "";
    return "unknown backend '" + value + "'; valid: " + kBackendChoices;
  } else {
    return "unknown name kind '" + key + "'";
  }
  if (known) return "";
  return "unknown " + key + " '" + value + "'; valid: " + common::join(valid, ", ");
}

std::string ResultRow::label() const {
  std::string out = collective + " " + dtype + " " + std::to_string(bytes) + " B";
  std::vector<std::string> extra;
  if (!backend.empty()) extra.push_back(backend);
  if (!placement.empty()) extra.push_back(placement);
  if (ranks) extra.push_back(std::to_string(ranks) + " ranks");
  if (hosts) extra.push_back(std::to_string(hosts) + " hosts");
  if (!extra.empty()) {
    out += " (";
    for (size_t i = 0; i < extra.size(); ++i) out += (i ? ", " : "") + extra[i];
    out += ")";
  }
  return out;
}

std::vector<ResultRow> read_result_rows(const nlohmann::json& doc, const std::string& origin) {
  std::vector<ResultRow> out;
  if (!doc.is_object()) throw UsageError("results '" + origin + "': not a JSON object");
  try {
    // smddp-bench writes both; its `rows` carry the backend, algorithm and memory.
    if (doc.contains("rows") && doc["rows"].is_array()) {
      read_bench_rows(doc, origin, out);
    } else if (doc.contains("results") && doc["results"].is_array()) {
      read_nccl_tests_results(doc, origin, out);
    } else {
      throw UsageError("results '" + origin + "': neither smddp-bench JSON ('rows') nor nccl-tests JSON ('results')");
    }
  } catch (const nlohmann::json::exception& e) {
    throw UsageError("results '" + origin + "': malformed row: " + e.what());
  } catch (const Malformed& e) {
    throw UsageError("results '" + origin + "': malformed: " + e.what());
  }
  return out;
}

std::vector<ResultRow> read_result_file(const std::string& path) {
  const std::string text = tools::read_input_file(path, "results '" + path + "'");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError("results '" + path + "': not JSON: " + e.what());
  }
  return read_result_rows(doc, path);
}

}  // namespace smddp::results
