// Each failure code through the outputs that carry it: a failed check with
// that code drains its node with `smddp:CODE`, labels its metric series with
// the code and action, and writes both into the JSON report; and every
// preflight check names a code of the table.
#include <gtest/gtest.h>

#include "preflight/checks.h"
#include "preflight/preflight_metrics.h"
#include "preflight/report.h"
#include "preflight/writers.h"
#include "smddp/results/failure_codes.h"

namespace smddp::diag {
namespace {

TEST(FailureCodes, EveryCheckNamesACodeOfTheTable) {
  for (const auto& s : check_specs()) {
    EXPECT_NE(results::find_failure_code(s.code), nullptr) << s.name << ": '" << s.code << "'";
    EXPECT_EQ(CheckResult::fail(std::string(s.name), "x").code, s.code);
  }
  EXPECT_EQ(default_fail_code("fabric_counters"), results::code::kFabricCounters);
  EXPECT_EQ(default_fail_code("no_such_check"), "SMDDP-UNCLASSIFIED");
}

TEST(FailureCodes, EachCodeReachesTheDrainReasonTheMetricAndTheJson) {
  for (const auto& c : results::failure_codes()) {
    const std::string code(c.code), action(results::to_string(c.action));
    PreflightReport report;
    NodeReport node;
    node.host = node.label = node.slurm_node = "node-1";
    node.checks.push_back(CheckResult::pass("memlock", "ok"));
    node.checks.push_back(CheckResult::fail("gpu_ecc", "GPU 0 has 3 uncorrectable ECC errors", {}, c.code));
    report.nodes.push_back(node);
    // Slurm: every action but none drains, with the code first; none is a note.
    const auto drains = drain_commands(report);
    const auto notes = undrained_notes(report);
    if (results::traits(c.action).drain) {
      ASSERT_EQ(drains.size(), 1u) << code;
      EXPECT_EQ(drains[0].reason, "smddp:" + code + " gpu_ecc: GPU 0 has 3 uncorrectable ECC errors");
      EXPECT_TRUE(notes.empty()) << code;
    } else {
      EXPECT_EQ(action, "none");
      EXPECT_TRUE(drains.empty()) << code;
      ASSERT_EQ(notes.size(), 1u) << code;
      EXPECT_EQ(notes[0], "# smddp:" + code + " node-1: not drained (action none): gpu_ecc: GPU 0 has 3 uncorrectable ECC errors");
    }
    EXPECT_EQ(results::traits(c.action).drain, c.action != results::Action::None) << code;
    const std::string prom = preflight_textfile(node, 0);
    EXPECT_NE(prom.find("smddp_preflight_check_healthy{action=\"" + action + "\",check=\"gpu_ecc\",code=\"" + code + "\"} 0"),
              std::string::npos) << prom;
    EXPECT_NE(prom.find("smddp_preflight_check_healthy{check=\"memlock\"} 1"), std::string::npos) << prom;
    const auto j = to_json(report);
    EXPECT_EQ(j["nodes"][0]["code"], code);
    EXPECT_EQ(j["nodes"][0]["action"], action);
    EXPECT_EQ(j["nodes"][0]["checks"][1]["code"], code);
    EXPECT_EQ(j["nodes"][0]["checks"][1]["action"], action);
    EXPECT_FALSE(j["nodes"][0]["checks"][0].contains("code"));
    // Read back (the exporter, other ranks): the code survives.
    EXPECT_EQ(report_from_json(j).nodes[0].checks[1].code, code);
  }
}

TEST(FailureCodes, ANodeLeadsWithItsFurthestGoingFailure) {
  PreflightReport report;
  NodeReport node;
  node.host = node.label = "n";
  node.checks.push_back(CheckResult::fail("memlock", "limit 1 MiB"));          // config
  node.checks.push_back(CheckResult::fail("gpu_count", "expected 8 GPUs, NVML found 7"));  // reboot
  node.checks.push_back(CheckResult::fail("gpu_temperature", "GPU 2 at 95 C"));  // escalate
  report.nodes.push_back(node);
  EXPECT_EQ(to_json(report)["nodes"][0]["code"], "SMDDP-PREFLIGHT-GPU-COUNT");
  EXPECT_EQ(drain_commands(report)[0].reason,
            "smddp:SMDDP-PREFLIGHT-GPU-COUNT gpu_count: expected 8 GPUs, NVML found 7; memlock: limit 1 MiB; gpu_temperature: GPU 2 at 95 C");
  // A report from before codes: a failed check takes its check's code.
  auto j = to_json(report);
  j["nodes"][0]["checks"][0].erase("code");
  EXPECT_EQ(report_from_json(j).nodes[0].checks[0].code, "SMDDP-PREFLIGHT-MEMLOCK");
}

}  // namespace
}  // namespace smddp::diag
