#include "exporter/inspector_parse.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <map>

#include "shared/text.h"
#include "smddp/common/strings.h"

namespace smddp::diag {
namespace {

constexpr size_t kMaxLine = 64 * 1024;
constexpr size_t kMaxLabel = 128;  // as the bench cuts its label values
constexpr const char* kUnits[] = {"B", "KB", "MB", "GB", "TB"};

std::string label(std::string_view v) {
  if (v.empty()) return "none";
  return std::string(v.substr(0, kMaxLabel));
}

std::optional<double> finite(double v, double scale) {
  if (!std::isfinite(v)) return std::nullopt;
  return v * scale;
}

// "Ring_LL128" -> {"ring", "ll128"}; no '_' -> {name, "none"}.
std::pair<std::string, std::string> split_algo_proto(std::string_view text) {
  const size_t us = text.find('_');
  if (us == std::string_view::npos) return {label(common::to_lower(text)), "none"};
  return {label(common::to_lower(text.substr(0, us))), label(common::to_lower(text.substr(us + 1)))};
}

std::optional<uint64_t> parse_u64(std::string_view text) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

// A JSON number member as double (nlohmann keeps integers apart); the plugin
// writes a NaN as the string "nan", which is "no value".
std::optional<double> number(const nlohmann::json& obj, const char* key, bool required, std::string* why) {
  auto it = obj.find(key);
  if (it != obj.end() && it->is_number()) return it->get<double>();
  if (it != obj.end() && it->is_string() && common::to_lower(it->get<std::string>()) == "nan") return std::nullopt;
  if (required || it != obj.end()) *why = std::string("\"") + key + "\" is not a number";
  return std::nullopt;
}

std::string text_member(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  if (it->is_number_unsigned()) return std::to_string(it->get<uint64_t>());
  return "";
}

// Prometheus text: `name{a="x",b="y"} value [timestamp]`.
bool parse_sample(std::string_view line, std::string* name, std::map<std::string, std::string>* labels, double* value) {
  size_t i = 0;
  while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' || line[i] == ':')) ++i;
  if (i == 0) return false;
  *name = std::string(line.substr(0, i));
  if (i < line.size() && line[i] == '{') {
    ++i;
    for (;;) {
      while (i < line.size() && (line[i] == ' ' || line[i] == ',')) ++i;
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      const size_t k = i;
      while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_')) ++i;
      if (i == k || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') return false;
      std::string key(line.substr(k, i - k)), v;
      i += 2;
      for (;; ++i) {
        if (i >= line.size()) return false;
        if (line[i] == '"') break;
        if (line[i] == '\\') {
          if (++i >= line.size()) return false;
          v += line[i] == 'n' ? '\n' : line[i];
        } else {
          v += line[i];
        }
      }
      ++i;
      if (!labels->emplace(std::move(key), std::move(v)).second) return false;  // a label twice
    }
  }
  std::string_view rest = common::trim(line.substr(i));
  const size_t space = rest.find_first_of(" \t");
  std::string number(rest.substr(0, space));  // an optional timestamp follows
  if (number.empty()) return false;
  char* end = nullptr;
  *value = std::strtod(number.c_str(), &end);
  return end == number.c_str() + number.size();
}

}  // namespace

uint64_t inspector_size_bucket(uint64_t bytes) {
  uint64_t unit = 1;
  for (int i = 0; i < 4 && bytes / unit >= 1024; ++i) unit *= 1024;
  return bytes / unit * unit;
}

std::optional<uint64_t> parse_inspector_size_range(std::string_view text) {
  if (text == "0B") return 0;
  const size_t dash = text.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  size_t digits = dash + 1;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  auto lower = parse_u64(text.substr(0, dash));
  auto upper = parse_u64(text.substr(dash + 1, digits - dash - 1));
  if (!lower || !upper || *upper != *lower + 1 || *lower == 0 || *lower >= 1024 * 1024) return std::nullopt;
  const std::string_view unit = text.substr(digits);
  uint64_t scale = 1;
  for (const char* u : kUnits) {
    if (unit == u) return *lower * scale;
    scale *= 1024;
  }
  return std::nullopt;
}

std::string inspector_collective_name(std::string_view nccl_name) {
  std::string out;
  for (char c : nccl_name) {
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return label(out);
}

std::optional<InspectorRecord> parse_inspector_json_line(std::string_view line, std::string* why) {
  if (line.size() > kMaxLine) {
    *why = "a line longer than 64 KiB";
    return std::nullopt;
  }
  if (!json_depth_within(line, 64)) {
    *why = "nested deeper than 64 levels";
    return std::nullopt;
  }
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *why = "not a JSON object";
    return std::nullopt;
  }
  auto header = j.find("header");
  auto meta = j.find("metadata");
  if (header == j.end() || !header->is_object() || meta == j.end() || !meta->is_object()) {
    *why = "no \"header\" or \"metadata\" object";
    return std::nullopt;
  }
  const char* prefix = nullptr;
  auto perf = j.find("coll_perf");
  if (perf != j.end()) prefix = "coll";
  else if ((perf = j.find("p2p_perf")) != j.end()) prefix = "p2p";
  if (!prefix || !perf->is_object()) {
    *why = "no \"coll_perf\" or \"p2p_perf\" object";
    return std::nullopt;
  }
  const std::string p = prefix;
  InspectorRecord r;
  r.key.host = label(text_member(*meta, "hostname"));
  r.key.job_id = "none";
  std::string comm = text_member(*header, "comm_name");
  if (comm.empty() || comm == "unknown") comm = text_member(*header, "id");
  r.key.comm = label(comm);
  r.key.rank = label(text_member(*header, "rank"));
  r.key.gpu = "none";
  r.key.nranks = label(text_member(*header, "n_ranks"));
  r.key.nnodes = label(text_member(*header, "nnodes"));
  auto op = perf->find(p);
  if (op == perf->end() || !op->is_string()) {
    *why = "no \"" + p + "\" name";
    return std::nullopt;
  }
  r.key.collective = inspector_collective_name(op->get<std::string>());
  auto size = perf->find(p + "_msg_size_bytes");
  if (size == perf->end() || !size->is_number_unsigned()) {
    *why = "\"" + p + "_msg_size_bytes\" is not a byte count";
    return std::nullopt;
  }
  r.key.size = std::to_string(inspector_size_bucket(size->get<uint64_t>()));
  r.key.algorithm = r.key.protocol = "none";
  why->clear();
  auto us = number(*perf, (p + "_exec_time_us").c_str(), true, why);
  auto bus = number(*perf, (p + "_busbw_gbs").c_str(), true, why);
  auto alg = number(*perf, (p + "_algobw_gbs").c_str(), false, why);
  auto ts = number(*meta, "dump_timestamp_us", false, why);
  if (!why->empty()) return std::nullopt;
  if (us) r.time = finite(*us, 1e-6);
  if (bus) r.busbw = finite(*bus, 1e9);
  if (alg) r.algbw = finite(*alg, 1e9);
  if (ts && std::isfinite(*ts)) r.timestamp = *ts / 1e6;
  return r;
}

std::vector<InspectorRecord> parse_inspector_prom(std::string_view text, size_t* bad_lines) {
  *bad_lines = 0;
  std::map<InspectorKey, InspectorRecord> series;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = common::trim(text.substr(start, end - start));
    start = end + 1;
    if (line.empty() || line.front() == '#') continue;
    std::string name;
    std::map<std::string, std::string> labels;
    double value = 0;
    if (line.size() > kMaxLine || !parse_sample(line, &name, &labels, &value)) {
      ++*bad_lines;
      continue;
    }
    const bool p2p = name.rfind("nccl_p2p_", 0) == 0;
    const bool bus = name == "nccl_bus_bandwidth_gbs" || name == "nccl_p2p_bus_bandwidth_gbs";
    const bool time = name == "nccl_collective_exec_time_microseconds" || name == "nccl_p2p_exec_time_microseconds";
    if (!bus && !time) continue;
    auto size = parse_inspector_size_range(labels["message_size"]);
    const std::string& op = labels[p2p ? "p2p_operation" : "collective"];
    if (!size || op.empty()) {
      ++*bad_lines;
      continue;
    }
    InspectorKey k;
    k.host = label(labels["node"]);
    k.job_id = label(labels["slurm_job_id"]);
    k.comm = label(labels["comm_name"]);
    k.rank = "none";
    std::string_view gpu = labels["gpu"];
    if (gpu.rfind("GPU", 0) == 0) gpu.remove_prefix(3);
    k.gpu = label(gpu);
    k.nranks = label(labels["nranks"]);
    k.nnodes = label(labels["n_nodes"]);
    k.collective = inspector_collective_name(op);
    k.size = std::to_string(*size);
    if (p2p) k.algorithm = k.protocol = "none";
    else std::tie(k.algorithm, k.protocol) = split_algo_proto(labels["algo_proto"]);
    InspectorRecord& r = series[k];
    r.key = k;
    if (bus) r.busbw = finite(value, 1e9);
    else r.time = finite(value, 1e-6);
  }
  std::vector<InspectorRecord> out;
  out.reserve(series.size());
  for (auto& [k, r] : series) out.push_back(std::move(r));
  return out;
}

}  // namespace smddp::diag
