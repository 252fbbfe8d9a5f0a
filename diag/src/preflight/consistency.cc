#include "preflight/consistency.h"

#include <algorithm>
#include <fmt/format.h>

#include "preflight/settings_advice.h"
#include "shared/text.h"

namespace smddp::diag {
namespace {

constexpr std::string_view kEnv = "env.";
constexpr size_t kNamed = 3;  // names listed before "+N more"

bool ignored(std::string_view name, const std::vector<std::string>& ignore) {
  return std::any_of(ignore.begin(), ignore.end(), [&](const std::string& g) { return glob_match(g, name); });
}

std::string shown(const std::optional<std::string>& v) { return v ? *v : "unset"; }

// "h0, h1, h2 (+2 more)"
std::string some(const std::vector<std::string>& names) {
  std::vector<std::string> head(names.begin(), names.begin() + static_cast<long>(std::min(names.size(), kNamed)));
  std::string s = join(head, ", ");
  if (names.size() > kNamed) s += fmt::format(" (+{} more)", names.size() - kNamed);
  return s;
}

}  // namespace

std::string setting_field(std::string_view name) { return std::string(kEnv) + std::string(name); }

std::string describe(std::string_view field, const std::optional<std::string>& value) {
  if (field.starts_with(kEnv)) {
    const std::string_view name = field.substr(kEnv.size());
    return value ? fmt::format("{}={}", name, *value) : fmt::format("{} unset", name);
  }
  return fmt::format("{} {}", field, shown(value));
}

std::optional<std::optional<std::string>> NodeView::get(const std::string& field) const {
  if (field.starts_with(kEnv)) {
    if (disputed.count(field)) return std::nullopt;
    auto it = values.find(field);
    return it == values.end() ? std::optional<std::string>() : std::optional<std::string>(it->second);
  }
  auto it = values.find(field);
  if (!has_facts || it == values.end()) return std::nullopt;
  return std::optional<std::string>(it->second);
}

NodeView resolve(const NodeEntry& node, const std::vector<std::string>& ignore, std::vector<Finding>* rank_findings) {
  NodeView v;
  if (node.facts) {
    v.has_facts = true;
    for (const auto& [k, val] : *node.facts) {
      if (!ignored(k, ignore)) v.values[k] = val;
    }
  }
  std::set<std::string> names;
  for (const auto& r : node.ranks) {
    for (const auto& [k, _] : r.env) names.insert(k);
  }
  for (const auto& name : names) {
    if (ignored(name, ignore)) continue;
    // value -> ranks with it, in rank order
    std::map<std::optional<std::string>, std::vector<int>> by_value;
    for (const auto& r : node.ranks) {
      auto it = r.env.find(name);
      by_value[it == r.env.end() ? std::nullopt : std::optional<std::string>(it->second)].push_back(r.rank);
    }
    const std::string field = setting_field(name);
    if (by_value.size() == 1) {
      if (by_value.begin()->first) v.values[field] = *by_value.begin()->first;
      continue;
    }
    v.disputed.insert(field);
    if (!rank_findings) continue;
    std::vector<std::string> sides;
    for (const auto& [val, ranks] : by_value) {
      std::vector<std::string> rs;
      for (int r : ranks) rs.push_back(std::to_string(r));
      sides.push_back(fmt::format("{} on rank{} {}", shown(val), ranks.size() > 1 ? "s" : "", some(rs)));
    }
    rank_findings->push_back({field, "(differs by rank)", "", fmt::format("ranks disagree on {}: {}", name, join(sides, "; "))});
  }
  return v;
}

std::set<std::string> setting_fields(const std::vector<NodeView>& views) {
  std::set<std::string> out;
  for (const auto& v : views) {
    for (const auto& [k, _] : v.values) {
      if (k.starts_with(kEnv)) out.insert(k);
    }
    out.insert(v.disputed.begin(), v.disputed.end());
  }
  return out;
}

std::vector<std::vector<Finding>> compare_nodes(const std::vector<NodeEntry>& nodes, const std::vector<std::string>& ignore) {
  std::vector<std::vector<Finding>> out(nodes.size());
  std::vector<NodeView> views;
  for (size_t n = 0; n < nodes.size(); ++n) views.push_back(resolve(nodes[n], ignore, &out[n]));
  std::set<std::string> fields = setting_fields(views);
  for (const auto& v : views) {
    for (const auto& [k, _] : v.values) {
      if (!k.starts_with(kEnv)) fields.insert(k);
    }
  }
  for (const auto& field : fields) {
    std::map<std::optional<std::string>, std::vector<size_t>> by_value;
    size_t taking_part = 0;
    for (size_t n = 0; n < views.size(); ++n) {
      if (auto val = views[n].get(field)) {
        by_value[*val].push_back(n);
        ++taking_part;
      }
    }
    if (by_value.size() < 2) continue;
    size_t most = 0;
    for (const auto& [_, ns] : by_value) most = std::max(most, ns.size());
    std::vector<std::optional<std::string>> tops;
    for (const auto& [val, ns] : by_value) {
      if (ns.size() == most) tops.push_back(val);
    }
    if (tops.size() == 1) {
      const auto& ref = tops.front();
      for (const auto& [val, ns] : by_value) {
        if (val == ref) continue;
        for (size_t n : ns) {
          out[n].push_back({field, shown(val), shown(ref),
                            fmt::format("{} ({} of {} nodes: {})", describe(field, val), most, taking_part, shown(ref))});
        }
      }
      continue;
    }
    // A tie: no value is the reference; every side is named, with the nodes of the others.
    for (const auto& [val, ns] : by_value) {
      std::vector<std::string> others;
      for (const auto& [oval, ons] : by_value) {
        if (oval == val) continue;
        std::vector<std::string> labels;
        for (size_t o : ons) labels.push_back(nodes[o].label);
        others.push_back(fmt::format("{} on {}", shown(oval), some(labels)));
      }
      for (size_t n : ns) {
        out[n].push_back({field, shown(val), "", fmt::format("{} (no majority: {})", describe(field, val), join(others, "; "))});
      }
    }
  }
  return out;
}

}  // namespace smddp::diag
