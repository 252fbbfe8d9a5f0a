#include "preflight/report.h"

#include "preflight/checks.h"
#include "smddp/error.h"

namespace smddp::diag {

std::string_view to_string(CheckStatus s) {
  switch (s) {
    case CheckStatus::Pass: return "pass";
    case CheckStatus::Fail: return "fail";
    case CheckStatus::Skip: return "skip";
  }
  return "fail";
}

CheckResult CheckResult::pass(std::string check, std::string reason, nlohmann::json values) {
  return CheckResult{std::move(check), CheckStatus::Pass, std::move(reason), std::move(values), {}};
}
CheckResult CheckResult::fail(std::string check, std::string reason, nlohmann::json values, std::string_view code) {
  std::string c(code.empty() ? default_fail_code(check) : code);
  return CheckResult{std::move(check), CheckStatus::Fail, std::move(reason), std::move(values), std::move(c)};
}
CheckResult CheckResult::skip(std::string check, std::string reason) {
  return CheckResult{std::move(check), CheckStatus::Skip, std::move(reason), nlohmann::json::object(), {}};
}

const results::FailureCode* CheckResult::failure_code() const {
  if (status != CheckStatus::Fail) return nullptr;
  if (const auto* c = results::find_failure_code(code)) return c;
  return &results::failure_code("SMDDP-UNCLASSIFIED");
}

bool NodeReport::healthy() const { return failures().empty(); }

std::vector<const CheckResult*> NodeReport::failures() const {
  std::vector<const CheckResult*> out;
  for (const auto& c : checks) {
    if (c.status == CheckStatus::Fail) out.push_back(&c);
  }
  return out;
}

const CheckResult* NodeReport::primary_failure() const {
  const CheckResult* best = nullptr;
  for (const CheckResult* f : failures()) {
    if (!best || f->failure_code()->action > best->failure_code()->action) best = f;
  }
  return best;
}

bool PreflightReport::healthy() const {
  for (const auto& n : nodes) {
    if (!n.healthy()) return false;
  }
  return true;
}

const NodeReport* PreflightReport::node_for_host(const std::string& host) const {
  for (const auto& n : nodes) {
    if (n.host == host || n.label == host) return &n;
  }
  return nodes.size() == 1 ? &nodes.front() : nullptr;
}

nlohmann::json to_json(const CheckResult& r) {
  nlohmann::json j = {{"name", r.check},
                      {"status", to_string(r.status)},
                      {"healthy", r.status != CheckStatus::Fail},
                      {"reason", r.reason},
                      {"values", r.values}};
  if (const auto* c = r.failure_code()) {
    j["code"] = c->code;
    j["action"] = results::to_string(c->action);
  }
  return j;
}

nlohmann::json to_json(const NodeReport& n) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : n.checks) checks.push_back(to_json(c));
  nlohmann::json j = {{"node", n.node}, {"host", n.host}, {"label", n.label}, {"slurm_node", n.slurm_node}, {"ranks", n.ranks},
                      {"healthy", n.healthy()}, {"checks", checks}};
  // The node's verdict: its furthest-going failure (what a drain or taint names).
  if (const CheckResult* f = n.primary_failure()) {
    j["code"] = f->failure_code()->code;
    j["action"] = results::to_string(f->failure_code()->action);
  }
  return j;
}

nlohmann::json to_json(const PreflightReport& r) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : r.nodes) nodes.push_back(to_json(n));
  return {{"tool", "smddp-diag preflight"}, {"version", r.version}, {"profile", r.profile},
          {"timestamp_ms", r.timestamp_ms}, {"ranks", r.ranks},    {"healthy", r.healthy()},
          {"nodes", nodes}};
}

CheckResult check_result_from_json(const nlohmann::json& j) {
  CheckResult r;
  r.check = j.at("name").get<std::string>();
  const std::string status = j.at("status").get<std::string>();
  if (status == "pass") r.status = CheckStatus::Pass;
  else if (status == "fail") r.status = CheckStatus::Fail;
  else if (status == "skip") r.status = CheckStatus::Skip;
  else throw Error("unknown check status '" + status + "'");
  r.reason = j.value("reason", "");
  r.values = j.value("values", nlohmann::json::object());
  // A report written before codes: the check's own.
  if (r.status == CheckStatus::Fail) r.code = j.value("code", std::string(default_fail_code(r.check)));
  return r;
}

NodeReport node_report_from_json(const nlohmann::json& j) {
  NodeReport n;
  n.node = j.at("node").get<int>();
  n.host = j.at("host").get<std::string>();
  n.label = j.value("label", n.host);
  n.slurm_node = j.value("slurm_node", n.host);
  n.ranks = j.value("ranks", std::vector<int>{});
  for (const auto& c : j.at("checks")) n.checks.push_back(check_result_from_json(c));
  return n;
}

PreflightReport report_from_json(const nlohmann::json& j) {
  PreflightReport r;
  r.profile = j.at("profile").get<std::string>();
  r.version = j.value("version", "");
  r.timestamp_ms = j.at("timestamp_ms").get<int64_t>();
  r.ranks = j.value("ranks", 1);
  for (const auto& n : j.at("nodes")) r.nodes.push_back(node_report_from_json(n));
  return r;
}

}  // namespace smddp::diag
