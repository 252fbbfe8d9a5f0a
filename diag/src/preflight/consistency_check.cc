// preflight's consistency check: versions and settings that must agree
// across the job (consistency.h), against --golden (golden.h), with advice
// on obsolete settings (settings_advice.h).
#include "preflight/consistency_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "preflight/checks.h"
#include "preflight/cluster.h"
#include "preflight/golden.h"
#include "preflight/settings_advice.h"
#include "shared/files.h"
#include "shared/text.h"

namespace smddp::diag {
namespace {

constexpr std::string_view kCheck = "consistency";

nlohmann::json finding_json(const Finding& f) {
  return {{"field", f.field}, {"value", f.value}, {"expected", f.expected}, {"text", f.text}};
}

// Advice for every setting any rank of the node has (each distinct value once).
std::vector<AdviceHit> node_advice(const NodeEntry& node) {
  const bool plugin = node.facts && node.facts->count("aws_ofi_nccl") && node.facts->at("aws_ofi_nccl") != "none";
  std::vector<AdviceHit> out;
  for (const auto& r : node.ranks) {
    for (auto& hit : advise(r.env, plugin)) {
      const bool seen = std::any_of(out.begin(), out.end(), [&](const AdviceHit& h) { return h.setting == hit.setting && h.value == hit.value; });
      if (!seen) out.push_back(std::move(hit));
    }
  }
  return out;
}

}  // namespace

std::string consistency_payload(bool leader, const FactSources& sources) {
  nlohmann::json j = {{"host", hostname()}, {"env", compared_settings()}};
  if (leader) {
    const GatheredFacts g = gather_facts(sources);
    j["facts"] = g.facts;
    j["notes"] = g.notes;
  }
  return j.dump();
}

GatheredNodes gather_nodes(const std::vector<std::optional<std::string>>& payloads, std::vector<int> node_of,
                           std::vector<std::string> labels) {
  GatheredNodes out;
  std::vector<std::optional<nlohmann::json>> per(payloads.size());
  for (size_t r = 0; r < payloads.size(); ++r) {
    if (payloads[r]) per[r] = nlohmann::json::parse(*payloads[r]);
    out.hosts.push_back(per[r] ? (*per[r])["host"].get<std::string>() : "");
  }
  if (node_of.empty()) {
    // By host, in order of each host's first rank; a rank that sent nothing joins no node.
    std::map<std::string, int> index;
    for (size_t r = 0; r < per.size(); ++r) {
      if (!per[r]) {
        node_of.push_back(-1);
        continue;
      }
      auto [it, fresh] = index.emplace(out.hosts[r], static_cast<int>(labels.size()));
      if (fresh) labels.push_back(out.hosts[r]);
      node_of.push_back(it->second);
    }
  }
  out.nodes.resize(labels.size());
  out.notes.resize(labels.size());
  out.missing.resize(labels.size());
  for (size_t n = 0; n < labels.size(); ++n) out.nodes[n].label = labels[n];
  for (size_t r = 0; r < per.size(); ++r) {
    if (node_of[r] < 0) continue;
    const size_t n = static_cast<size_t>(node_of[r]);
    if (!per[r]) {
      out.missing[n].push_back(static_cast<int>(r));
      continue;
    }
    const auto& j = *per[r];
    out.nodes[n].ranks.push_back({static_cast<int>(r), j["env"].get<Settings>()});
    if (j.contains("facts") && !out.nodes[n].facts) {
      out.nodes[n].facts = j["facts"].get<Facts>();
      out.notes[n] = j["notes"].get<Facts>();
    }
  }
  return out;
}

FactSources consistency_sources(const FactSources& base, const Faults& faults, const Params& p) {
  FactSources s = base;
  s.nccl_library = p.string("nccl_library");
  s.nccl_version_fault = faults.nccl_version;
  return s;
}

std::vector<CheckResult> check_consistency(ClusterContext& ctx, const Params& p) {
  const double timeout = p.number("timeout_s");
  const FactSources sources = consistency_sources(ctx.fact_sources, ctx.faults, p);
  auto payloads = gather_until(ctx.comm, 0, consistency_payload(ctx.leader(), sources), kTagFacts, deadline_in(timeout));
  if (ctx.rank != 0) return {};
  std::vector<int> leaders = ctx.leaders;
  return judge_consistency(gather_nodes(payloads, ctx.node_of, ctx.labels), ctx.hosts, leaders, ctx.golden, p);
}

std::vector<CheckResult> judge_consistency(const GatheredNodes& g, const std::vector<std::string>& rank_hosts,
                                           const std::vector<int>& leaders, const Golden* golden, const Params& p) {
  const double timeout = p.number("timeout_s");
  const std::vector<std::string>& ignore = p.strings("ignore");
  const auto who = [&](int r) { return fmt::format("rank {} ({})", r, rank_hosts.at(static_cast<size_t>(r))); };
  auto findings = compare_nodes(g.nodes, ignore);
  std::vector<CheckResult> out;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const NodeEntry& node = g.nodes[n];
    std::vector<std::string> problems;
    for (int r : g.missing[n]) problems.push_back(fmt::format("no settings from {} within {} s", who(r), timeout));
    if (!node.facts) problems.push_back(fmt::format("no versions from {} within {} s", who(leaders.at(n)), timeout));
    const NodeView view = resolve(node, ignore, nullptr);
    if (golden) {
      for (auto& f : compare_golden(*golden, view)) findings[n].push_back(std::move(f));
    }
    for (const auto& f : findings[n]) problems.push_back(f.text);
    nlohmann::json settings = nlohmann::json::object();
    for (const auto& [field, value] : view.values) {
      if (field.starts_with("env.")) settings[field.substr(4)] = value;
    }
    nlohmann::json values = {{"facts", node.facts ? nlohmann::json(*node.facts) : nlohmann::json(nullptr)},
                             {"notes", g.notes[n]},
                             {"settings", settings}};
    nlohmann::json warnings = nlohmann::json::array();
    for (const auto& hit : node_advice(node)) {
      warnings.push_back({{"setting", hit.setting}, {"value", hit.value}, {"advice", hit.row->advice}, {"source", hit.row->source}});
    }
    values["warnings"] = warnings;
    if (!problems.empty()) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& f : findings[n]) list.push_back(finding_json(f));
      values["code"] = kConfigCode;
      values["findings"] = list;
      out.push_back(CheckResult::fail(std::string(kCheck), join(problems, "; "), values));
      continue;
    }
    std::string reason = g.nodes.size() > 1 ? fmt::format("versions and settings agree across {} nodes", g.nodes.size())
                                            : "one node: nothing to compare with other nodes";
    if (golden) reason += fmt::format("; golden {} matches", golden->origin);
    if (!warnings.empty()) reason += fmt::format("; {} warning(s) about settings", warnings.size());
    out.push_back(CheckResult::pass(std::string(kCheck), reason, values));
  }
  return out;
}

CheckResult consistency_alone(const FactSources& base, const Faults& faults, const Golden* golden, const Params& p) {
  const std::vector<std::optional<std::string>> payloads = {consistency_payload(true, consistency_sources(base, faults, p))};
  const GatheredNodes g = gather_nodes(payloads, {}, {});
  return judge_consistency(g, g.hosts, {0}, golden, p).front();
}

std::vector<std::string> advice_lines(const PreflightReport& report) {
  // advice text -> nodes, in first-seen order
  std::vector<std::pair<std::string, std::vector<std::string>>> seen;
  for (const auto& node : report.nodes) {
    for (const auto& c : node.checks) {
      if (c.check != kCheck || !c.values.contains("warnings")) continue;
      for (const auto& w : c.values["warnings"]) {
        const std::string text = fmt::format("{}={}: {} ({})", w["setting"].get<std::string>(), w["value"].get<std::string>(),
                                             w["advice"].get<std::string>(), w["source"].get<std::string>());
        auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == text; });
        if (it == seen.end()) it = seen.insert(seen.end(), {text, {}});
        it->second.push_back(node.label);
      }
    }
  }
  std::vector<std::string> lines;
  for (const auto& [text, nodes] : seen) {
    std::vector<std::string> head(nodes.begin(), nodes.begin() + static_cast<long>(std::min<size_t>(nodes.size(), 3)));
    std::string who = join(head, ", ") + (nodes.size() > 3 ? fmt::format(" (+{} more)", nodes.size() - 3) : "");
    lines.push_back(fmt::format("smddp-diag preflight: warning: {} of {} node(s) ({}) set {}", nodes.size(), report.nodes.size(), who, text));
  }
  return lines;
}

}  // namespace smddp::diag
