#include "preflight/golden.h"

#include <algorithm>
#include <fmt/format.h>
#include <set>
#include <nlohmann/json.hpp>

#include "preflight/node_facts.h"
#include "preflight/settings_advice.h"
#include "shared/text.h"
#include "smddp/error.h"
#include "smddp/tools/input_file.h"

namespace smddp::diag {
namespace {

constexpr int kFormat = 1;
constexpr size_t kMaxAlternatives = 64;

[[noreturn]] void bad(const std::string& origin, const std::string& what) {
  throw UsageError(fmt::format("golden '{}': {}", origin, what));
}

GoldenValue value_of(const nlohmann::json& j, const std::string& where, bool unset_allowed, const std::string& origin) {
  const auto one = [&](const nlohmann::json& v) -> std::optional<std::string> {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_null() && unset_allowed) return std::nullopt;
    bad(origin, fmt::format("{}: expected a string{}, got {}", where, unset_allowed ? " or null (unset)" : "", v.dump()));
  };
  GoldenValue out;
  if (j.is_array()) {
    if (j.empty() || j.size() > kMaxAlternatives) bad(origin, fmt::format("{}: expected 1 to {} alternatives", where, kMaxAlternatives));
    for (const auto& v : j) out.push_back(one(v));
  } else {
    out.push_back(one(j));
  }
  return out;
}

std::vector<std::string> fact_names() {
  std::vector<std::string> names;
  for (const auto& f : fact_fields()) names.emplace_back(f.name);
  return names;
}

}  // namespace

Golden parse_golden(const std::string& text, const std::string& origin) {
  // nlohmann keeps the last of a repeated key silently: refuse it.
  std::vector<std::set<std::string>> keys;
  const auto no_duplicates = [&](int, nlohmann::json::parse_event_t e, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (e == E::object_start) keys.emplace_back();
    if (e == E::object_end && !keys.empty()) keys.pop_back();
    if (e == E::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second) {
      bad(origin, fmt::format("duplicate key '{}'", parsed.get<std::string>()));
    }
    return true;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, no_duplicates);
  } catch (const nlohmann::json::exception& e) {
    bad(origin, std::string("not JSON: ") + e.what());
  }
  if (!j.is_object()) bad(origin, "expected an object with smddp_golden, fields and env");
  Golden g;
  g.origin = origin;
  for (const auto& [key, v] : j.items()) {
    if (key == "smddp_golden") {
      if (!v.is_number_integer() || v.get<int64_t>() != kFormat) bad(origin, fmt::format("smddp_golden: expected {}, got {}", kFormat, v.dump()));
    } else if (key == "fields" || key == "env") {
      if (!v.is_object()) bad(origin, key + ": expected an object");
    } else if (key != "learned" && key != "description") {
      bad(origin, fmt::format("unknown key '{}' (expected smddp_golden, fields, env, learned, description)", key));
    }
  }
  if (!j.contains("smddp_golden")) bad(origin, fmt::format("no \"smddp_golden\": {} (not a golden file?)", kFormat));
  if (j.contains("fields")) {
    const auto known = fact_names();
    for (const auto& [name, v] : j["fields"].items()) {
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        bad(origin, fmt::format("fields: unknown field '{}' (known: {})", name, join(known, ", ")));
      }
      g.fields[name] = value_of(v, "fields." + name, false, origin);
    }
  }
  if (j.contains("env")) {
    for (const auto& [name, v] : j["env"].items()) {
      if (!is_compared_setting(name)) bad(origin, fmt::format("env: '{}' is not a compared setting (NCCL_*, FI_*, SMDDP_*, RDMAV_*)", name));
      g.env[name] = value_of(v, "env." + name, true, origin);
    }
  }
  return g;
}

Golden load_golden(const std::string& path) {
  return parse_golden(tools::read_input_file(path, "--golden '" + path + "'", kMaxGoldenBytes), path);
}

bool golden_matches(const GoldenValue& want, const std::optional<std::string>& value) {
  for (const auto& alt : want) {
    if (!alt && !value) return true;
    if (alt && value && glob_match(*alt, *value)) return true;
  }
  return false;
}

std::string golden_text(const GoldenValue& want) {
  std::vector<std::string> parts;
  for (const auto& alt : want) parts.push_back(alt ? *alt : "unset");
  return join(parts, " or ");
}

std::vector<Finding> compare_golden(const Golden& golden, const NodeView& node) {
  std::vector<Finding> out;
  const auto check = [&](const std::string& field, const GoldenValue& want) {
    const auto got = node.get(field);
    if (!got || golden_matches(want, *got)) return;
    const std::string value = *got ? **got : "unset";
    out.push_back({field, value, golden_text(want), fmt::format("{} (golden {}: {})", describe(field, *got), golden.origin, golden_text(want))});
  };
  for (const auto& [name, want] : golden.fields) check(name, want);
  for (const auto& [name, want] : golden.env) check(setting_field(name), want);
  // A setting the golden file does not list must be unset.
  for (const auto& [field, value] : node.values) {
    if (!field.starts_with("env.") || golden.env.count(field.substr(4))) continue;
    out.push_back({field, value, "unset", fmt::format("{} (golden {}: not listed, so unset)", describe(field, value), golden.origin)});
  }
  return out;
}

std::string learn_golden(const std::vector<NodeEntry>& nodes, const std::vector<std::string>& ignore) {
  const auto findings = compare_nodes(nodes, ignore);
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (!findings[n].empty()) {
      throw Error(fmt::format("the nodes disagree, so there is no golden value to learn: {}: {}", nodes[n].label, findings[n].front().text));
    }
  }
  nlohmann::json fields = nlohmann::json::object(), env = nlohmann::json::object();
  for (const auto& node : nodes) {
    const NodeView v = resolve(node, ignore, nullptr);
    for (const auto& [field, value] : v.values) {
      if (field.starts_with("env.")) {
        env[field.substr(4)] = value;
      } else {
        fields[field] = value;
      }
    }
  }
  // An ignored setting (a per-job token, say) may be anything, or unset.
  for (const auto& node : nodes) {
    for (const auto& r : node.ranks) {
      for (const auto& [name, _] : r.env) {
        const bool skip = std::any_of(ignore.begin(), ignore.end(), [&](const std::string& g) { return glob_match(g, name); });
        if (skip) env[name] = nlohmann::json::array({"*", nullptr});
      }
    }
  }
  nlohmann::json doc = {{"smddp_golden", kFormat},
                        {"learned", {{"nodes", nodes.size()}}},
                        {"fields", fields},
                        {"env", env}};
  return doc.dump(2) + "\n";
}

}  // namespace smddp::diag
