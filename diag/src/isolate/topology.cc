#include "isolate/topology.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "shared/files.h"
#include "shared/text.h"
#include "smddp/error.h"
#include "smddp/tools/input_file.h"

namespace smddp::diag {
namespace {

// A label or host as an operator would type it: printable, no spaces.
bool plain(const std::string& s) {
  return !s.empty() && s.size() <= 255 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c > ' ' && c < 127; });
}

// A value as the one-line messages show it: control bytes as '?', at most 64 bytes.
std::string shown(const std::string& s) {
  std::string out = s.substr(0, 64);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out + (s.size() > 64 ? "..." : "");
}

void add(TopologyMap& map, const std::string& key, std::vector<std::string> labels, const std::string& what,
         const std::string& where) {
  if (!plain(key)) throw UsageError(fmt::format("{}: {}: '{}' is not a host name", what, where, shown(key)));
  if (labels.empty() || labels.size() > kMaxTopologyLayers) {
    throw UsageError(fmt::format("{}: {}: {} network-node labels for {}; expected 1 to {}", what, where, labels.size(), shown(key),
                                 kMaxTopologyLayers));
  }
  for (const auto& l : labels) {
    if (!plain(l)) throw UsageError(fmt::format("{}: {}: label '{}' of {} is empty or not printable", what, where, shown(l), shown(key)));
  }
  if (!map.empty() && map.begin()->second.size() != labels.size()) {
    throw UsageError(fmt::format("{}: {}: {} has {} labels, {} has {}: every host needs the same layers", what, where, shown(key),
                                 labels.size(), shown(map.begin()->first), map.begin()->second.size()));
  }
  if (!map.emplace(key, std::move(labels)).second) throw UsageError(fmt::format("{}: {}: {} is listed twice", what, where, shown(key)));
}

TopologyMap parse_ec2(const std::string& text, const std::string& what) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("{}: not JSON: {}", what, e.what()));
  }
  if (!doc.is_object() || !doc.contains("Instances") || !doc["Instances"].is_array()) {
    throw UsageError(what + ": JSON without an \"Instances\" list (aws ec2 describe-instance-topology output)");
  }
  TopologyMap map;
  size_t i = 0;
  for (const auto& inst : doc["Instances"]) {
    const std::string where = fmt::format("Instances[{}]", i++);
    if (!inst.is_object() || !inst.contains("InstanceId") || !inst["InstanceId"].is_string() ||
        !inst.contains("NetworkNodes") || !inst["NetworkNodes"].is_array()) {
      throw UsageError(fmt::format("{}: {}: needs \"InstanceId\" and a \"NetworkNodes\" list", what, where));
    }
    std::vector<std::string> labels;
    for (const auto& n : inst["NetworkNodes"]) {
      if (!n.is_string()) throw UsageError(fmt::format("{}: {}: NetworkNodes holds a non-string", what, where));
      labels.push_back(n.get<std::string>());
    }
    add(map, inst["InstanceId"].get<std::string>(), std::move(labels), what, where);
  }
  if (map.empty()) throw UsageError(what + ": no instances listed");
  return map;
}

}  // namespace

TopologyMap parse_topology(const std::string& text, const std::string& what) {
  const auto first = std::find_if(text.begin(), text.end(), [](char c) { return !common::is_space(c); });
  if (first != text.end() && *first == '{') return parse_ec2(text, what);
  TopologyMap map;
  for (auto& [line_no, words] : table_lines(text)) {
    if (words.size() < 2) throw UsageError(fmt::format("{}: line {}: '{}' has no network-node label (HOST LABEL...)", what, line_no, words[0]));
    const std::string host = words[0];
    words.erase(words.begin());
    add(map, host, std::move(words), what, fmt::format("line {}", line_no));
  }
  if (map.empty()) throw UsageError(what + ": no hosts listed");
  return map;
}

TopologyMap load_topology(const std::string& path, const std::string& what) {
  // Far above any fleet's file (4096 EC2 entries are about 1 MiB).
  return parse_topology(tools::read_input_file(path, what, size_t{64} << 20), what);
}

std::optional<std::vector<std::string>> placement_of(const TopologyMap& map, const std::string& host,
                                                     const std::string& instance_id) {
  if (auto it = map.find(host); it != map.end()) return it->second;
  if (!instance_id.empty()) {
    if (auto it = map.find(instance_id); it != map.end()) return it->second;
  }
  return std::nullopt;
}

std::vector<int> rack_ids(const std::vector<std::vector<std::string>>& layers) {
  std::map<std::string, int> ids;
  std::vector<int> out;
  for (const auto& l : layers) {
    // "\n" cannot be a label: the key of the nodes without any.
    const std::string key = l.empty() ? "\n" : l.back();
    out.push_back(ids.emplace(key, static_cast<int>(ids.size())).first->second);
  }
  return out;
}

std::string ec2_instance_id(const std::string& dmi_asset_tag_path) {
  const auto line = read_line(dmi_asset_tag_path);
  if (!line || line->rfind("i-", 0) != 0 || !plain(*line)) return "";
  return *line;
}

}  // namespace smddp::diag
