#include "isolate/report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>

#include "preflight/counter_check.h"
#include "smddp/version.h"

namespace smddp::diag {
namespace {

// What a re-measurement re-measures (NodeTest::Subject), for the JSON.
const char* retest_name(NodeTest::Subject s) {
  switch (s) {
    case NodeTest::Subject::Suspect: return "suspect";  // the first node
    case NodeTest::Subject::BothSuspects: return "suspects";
    case NodeTest::Subject::Link: return "link";
    case NodeTest::Subject::Reference: return "reference";
  }
  return "?";
}

nlohmann::json tests_json(const IsolateRun& run) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : run.schedule->tests()) {
    std::vector<std::string> nodes;
    for (int n : t.nodes) nodes.push_back(run.labels[static_cast<size_t>(n)]);
    out.push_back({{"round", t.round}, {"kind", t.pair() ? "pair" : "group"}, {"nodes", nodes},
                   {"allreduce_busbw_gbs", t.busbw_gbs}, {"stream_gbs", t.stream_gbs},
                   {"error", t.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.error)},
                   {"corruption", t.corruption.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.corruption)},
                   {"retest", t.retry ? nlohmann::json(retest_name(t.subject)) : nlohmann::json(nullptr)}});
  }
  return out;
}

}  // namespace

PreflightReport isolate_report(const IsolateRun& run) {
  PreflightReport report;
  report.profile = run.profile;
  report.version = kVersion;
  report.timestamp_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  report.ranks = run.ranks;
  const auto verdicts = run.schedule->verdicts();
  for (int n = 0; n < static_cast<int>(run.labels.size()); ++n) {
    NodeReport node;
    node.node = n;
    node.host = node.label = run.labels[static_cast<size_t>(n)];
    node.ranks = run.ranks_of[static_cast<size_t>(n)];
    const auto& v = verdicts[static_cast<size_t>(n)];
    nlohmann::json values = {{"pair_tests", v.tests}};
    if (v.busbw_gbs) values["allreduce_busbw_gbs"] = *v.busbw_gbs;
    if (v.stream_gbs) values["stream_gbs"] = *v.stream_gbs;
    if (v.failed) {
      node.checks.push_back(CheckResult::fail("isolate", fmt::format("{}", fmt::join(v.reasons, "; ")), values, v.code));
    } else if (v.tests == 0) {
      node.checks.push_back(CheckResult::skip("isolate", run.labels.size() < 2 ? "one node: no pair to test" : "not tested"));
    } else {
      node.checks.push_back(CheckResult::pass(
          "isolate", fmt::format("allreduce busbw {:.3f} GB/s, bidirectional {:.3f} GB/s, best of {} pair test(s){}",
                                 v.busbw_gbs.value_or(0), v.stream_gbs.value_or(0), v.tests, v.note.empty() ? "" : "; " + v.note),
          values));
    }
    // Counters that moved while the rounds ran fail the node, as in preflight.
    if (static_cast<size_t>(n) < run.counters.size() && run.counters[static_cast<size_t>(n)]) {
      node.checks.push_back(counter_result(*run.counters[static_cast<size_t>(n)], "the isolate tests"));
    }
    report.nodes.push_back(std::move(node));
  }
  return report;
}

nlohmann::json isolate_json(const PreflightReport& report, const IsolateRun& run) {
  nlohmann::json j = to_json(report);
  nlohmann::json moved = nlohmann::json::object();  // by host; nodes without counters are absent
  for (size_t n = 0; n < run.counters.size(); ++n) {
    if (run.counters[n]) moved[run.labels[n]] = to_json(*run.counters[n]);
  }
  const IsolateLimits& l = run.limits;
  j["isolate"] = {{"rounds", run.schedule->rounds()}, {"round_bound_s", run.round_bound_s}, {"tests", tests_json(run)},
                  {"fabric_counters", moved}, {"seed", run.seed}, {"racks", run.racks},
                  {"limits", {{"mad_k", l.mad_k}, {"mad_floor", l.mad_floor}, {"min_drop", l.min_drop},
                              {"min_busbw_gbs", l.min_busbw_gbs}, {"min_stream_gbs", l.min_stream_gbs},
                              {"busbw_floor_by", l.busbw_floor_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(l.busbw_floor_by)},
                              {"pairings", l.pairings}, {"retries", l.retries}, {"bisect_min_nodes", l.bisect_min_nodes}}}};
  return j;
}

}  // namespace smddp::diag
