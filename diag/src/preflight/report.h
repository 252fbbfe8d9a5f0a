// Preflight results: one CheckResult per check and node, gathered into a
// PreflightReport that every writer (text lines, JSON, Prometheus textfile,
// EMF, Slurm drain commands) and the exporter read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "smddp/results/failure_codes.h"

namespace smddp::diag {

enum class CheckStatus { Pass, Fail, Skip };
std::string_view to_string(CheckStatus s);

struct CheckResult {
  std::string check;
  CheckStatus status = CheckStatus::Pass;
  std::string reason;  // why it failed, was skipped, or what it measured
  nlohmann::json values = nlohmann::json::object();
  // Failed results: the failure code (smddp/results/failure_codes.h); its
  // action class comes from the table. Empty for a pass or a skip.
  std::string code;

  static CheckResult pass(std::string check, std::string reason, nlohmann::json values = nlohmann::json::object());
  // `code` empty: the check's own (default_fail_code, checks.h).
  static CheckResult fail(std::string check, std::string reason, nlohmann::json values = nlohmann::json::object(),
                          std::string_view code = {});
  static CheckResult skip(std::string check, std::string reason);

  // Failed results: the code's row (SMDDP-UNCLASSIFIED for a code this build
  // does not know, from a newer report). Passes and skips: nullptr.
  const results::FailureCode* failure_code() const;
};

struct NodeReport {
  int node = 0;
  std::string host;        // the host name
  std::string label;       // host, or host#N when several nodes share one host (test setups)
  std::string slurm_node;  // what Slurm calls the node (shared/slurm.h): drains name it
  std::vector<int> ranks;
  std::vector<CheckResult> checks;

  bool healthy() const;
  std::vector<const CheckResult*> failures() const;
  // The failure whose action goes furthest (the first of equals); nullptr
  // when healthy. Drain reasons and taints lead with its code.
  const CheckResult* primary_failure() const;
};

struct PreflightReport {
  std::string profile;
  std::string version;
  int64_t timestamp_ms = 0;
  int ranks = 1;
  std::vector<NodeReport> nodes;

  bool healthy() const;
  // The node whose host is `host`; the only node when there is one; else nullptr.
  const NodeReport* node_for_host(const std::string& host) const;
};

nlohmann::json to_json(const CheckResult& r);
nlohmann::json to_json(const NodeReport& n);
nlohmann::json to_json(const PreflightReport& r);
// Throws std::exception (nlohmann or smddp::Error) for a document that is not a report.
CheckResult check_result_from_json(const nlohmann::json& j);
NodeReport node_report_from_json(const nlohmann::json& j);
PreflightReport report_from_json(const nlohmann::json& j);

}  // namespace smddp::diag
