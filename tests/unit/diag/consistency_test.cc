// Unit tests of preflight's consistency comparison (majority, minority,
// ties, rank disputes, ignore globs), golden files (parsing, globs,
// comparison, learning), the settings-advice table and the fact parsers.
#include <gtest/gtest.h>

#include <set>

#include "preflight/consistency.h"
#include "preflight/golden.h"
#include "preflight/node_facts.h"
#include "preflight/settings_advice.h"
#include "smddp/error.h"

namespace smddp::diag {
namespace {

NodeEntry node(const std::string& label, Facts facts, std::vector<Settings> ranks, int first_rank = 0) {
  NodeEntry n;
  n.label = label;
  n.facts = std::move(facts);
  for (size_t i = 0; i < ranks.size(); ++i) n.ranks.push_back({first_rank + static_cast<int>(i), ranks[i]});
  return n;
}

std::vector<NodeEntry> four(const std::string& nccl3, const Settings& env3) {
  return {node("h0", {{"nccl", "2.21.5"}}, {{}}, 0), node("h1", {{"nccl", "2.21.5"}}, {{}}, 1),
          node("h2", {{"nccl", "2.21.5"}}, {{}}, 2), node("h3", {{"nccl", nccl3}}, {env3}, 3)};
}

TEST(Consistency, IdenticalNodesHaveNoFinding) {
  for (const auto& f : compare_nodes(four("2.21.5", {}), {})) EXPECT_TRUE(f.empty());
}

TEST(Consistency, MinorityNodeIsNamedWithTheMajorityValue) {
  auto f = compare_nodes(four("2.18.1", {}), {});
  for (int n = 0; n < 3; ++n) EXPECT_TRUE(f[n].empty()) << n;
  ASSERT_EQ(f[3].size(), 1u);
  EXPECT_EQ(f[3][0].field, "nccl");
  EXPECT_EQ(f[3][0].value, "2.18.1");
  EXPECT_EQ(f[3][0].expected, "2.21.5");
  EXPECT_EQ(f[3][0].text, "nccl 2.18.1 (3 of 4 nodes: 2.21.5)");
}

TEST(Consistency, SettingSetOnOneNodeIsNamed) {
  auto f = compare_nodes(four("2.21.5", {{"NCCL_PROTO", "LL128"}}), {});
  for (int n = 0; n < 3; ++n) EXPECT_TRUE(f[n].empty()) << n;
  ASSERT_EQ(f[3].size(), 1u);
  EXPECT_EQ(f[3][0].field, "env.NCCL_PROTO");
  EXPECT_EQ(f[3][0].text, "NCCL_PROTO=LL128 (3 of 4 nodes: unset)");
}

TEST(Consistency, SettingUnsetOnOneNodeIsNamed) {
  auto nodes = four("2.21.5", {});
  for (int n = 0; n < 3; ++n) nodes[static_cast<size_t>(n)].ranks[0].env["FI_PROVIDER"] = "efa";
  auto f = compare_nodes(nodes, {});
  ASSERT_EQ(f[3].size(), 1u);
  EXPECT_EQ(f[3][0].text, "FI_PROVIDER unset (3 of 4 nodes: efa)");
  EXPECT_TRUE(f[0].empty());
}

TEST(Consistency, TieNamesBothSides) {
  std::vector<NodeEntry> nodes = {node("a", {{"nccl", "2.21.5"}}, {{}}), node("b", {{"nccl", "2.18.1"}}, {{}})};
  auto f = compare_nodes(nodes, {});
  ASSERT_EQ(f[0].size(), 1u);
  ASSERT_EQ(f[1].size(), 1u);
  EXPECT_EQ(f[0][0].text, "nccl 2.21.5 (no majority: 2.18.1 on b)");
  EXPECT_EQ(f[1][0].text, "nccl 2.18.1 (no majority: 2.21.5 on a)");
  // 2 against 2: all four named.
  auto g = compare_nodes({node("a", {{"kernel", "1"}}, {{}}), node("b", {{"kernel", "1"}}, {{}}),
                          node("c", {{"kernel", "2"}}, {{}}), node("d", {{"kernel", "2"}}, {{}})},
                         {});
  for (const auto& x : g) EXPECT_EQ(x.size(), 1u);
  EXPECT_EQ(g[2][0].text, "kernel 2 (no majority: 1 on a, b)");
}

TEST(Consistency, PluralityIsTheReference) {
  auto f = compare_nodes({node("a", {{"nccl", "1"}}, {{}}), node("b", {{"nccl", "1"}}, {{}}), node("c", {{"nccl", "2"}}, {{}}),
                          node("d", {{"nccl", "3"}}, {{}})},
                         {});
  EXPECT_TRUE(f[0].empty());
  EXPECT_TRUE(f[1].empty());
  ASSERT_EQ(f[2].size(), 1u);
  EXPECT_EQ(f[2][0].text, "nccl 2 (2 of 4 nodes: 1)");
  EXPECT_EQ(f[3][0].text, "nccl 3 (2 of 4 nodes: 1)");
}

TEST(Consistency, RanksOfOneNodeThatDisagreeNameThatNodeOnce) {
  auto nodes = four("2.21.5", {});
  nodes[2].ranks = {{4, {}}, {5, {{"NCCL_PROTO", "LL128"}}}};
  auto f = compare_nodes(nodes, {});
  EXPECT_TRUE(f[0].empty());
  EXPECT_TRUE(f[3].empty());
  ASSERT_EQ(f[2].size(), 1u);  // the dispute only: the setting is left out of the comparison across nodes
  EXPECT_EQ(f[2][0].text, "ranks disagree on NCCL_PROTO: unset on rank 4; LL128 on rank 5");
}

TEST(Consistency, IgnoredNamesAreNotCompared) {
  auto f = compare_nodes(four("2.18.1", {{"NCCL_SOCKET_IFNAME", "eth1"}}), {"nccl", "NCCL_SOCKET_*"});
  for (const auto& x : f) EXPECT_TRUE(x.empty());
}

TEST(Consistency, NodeWithoutFactsTakesNoPartInFacts) {
  auto nodes = four("2.21.5", {});
  nodes[1].facts.reset();
  auto f = compare_nodes(nodes, {});
  for (const auto& x : f) EXPECT_TRUE(x.empty());
}

TEST(Consistency, ComparedSettings) {
  for (const char* yes : {"NCCL_PROTO", "FI_PROVIDER", "SMDDP_TIMEOUT", "RDMAV_FORK_SAFE"}) EXPECT_TRUE(is_compared_setting(yes)) << yes;
  for (const char* no : {"SMDDP_DIAG_FAULT", "OMPI_COMM_WORLD_RANK", "CUDA_VISIBLE_DEVICES", "HOSTNAME", "NCCL_", "PMIX_RANK"}) {
    EXPECT_FALSE(is_compared_setting(no)) << no;
  }
}

std::string golden_error(const std::string& text) {
  try {
    parse_golden(text, "g.json");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Golden, ParsesValuesGlobsAndUnset) {
  Golden g = parse_golden(R"({"smddp_golden": 1, "fields": {"nccl": "2.21.*", "kernel": ["6.1.*", "6.8.*"]},
                              "env": {"FI_PROVIDER": "efa", "NCCL_DEBUG": ["WARN", null], "RDMAV_FORK_SAFE": null}})",
                          "g.json");
  EXPECT_TRUE(golden_matches(g.fields["nccl"], "2.21.5"));
  EXPECT_FALSE(golden_matches(g.fields["nccl"], "2.18.1"));
  EXPECT_FALSE(golden_matches(g.fields["nccl"], "12.21.5"));
  EXPECT_TRUE(golden_matches(g.fields["kernel"], "6.8.0-1015-aws"));
  EXPECT_TRUE(golden_matches(g.env["NCCL_DEBUG"], std::nullopt));
  EXPECT_TRUE(golden_matches(g.env["NCCL_DEBUG"], "WARN"));
  EXPECT_FALSE(golden_matches(g.env["NCCL_DEBUG"], "INFO"));
  EXPECT_FALSE(golden_matches(g.env["FI_PROVIDER"], std::nullopt));
  EXPECT_FALSE(golden_matches(g.env["RDMAV_FORK_SAFE"], "1"));
  EXPECT_EQ(golden_text(g.env["NCCL_DEBUG"]), "WARN or unset");
}

TEST(Golden, BadFilesAreOneLineUsageErrors) {
  EXPECT_EQ(golden_error(R"({"smddp_golden": 1, "fields": {"nccl": )").substr(0, 22), "golden 'g.json': not J");
  EXPECT_EQ(golden_error("[]"), "golden 'g.json': expected an object with smddp_golden, fields and env");
  EXPECT_EQ(golden_error(R"({"fields": {}})"), "golden 'g.json': no \"smddp_golden\": 1 (not a golden file?)");
  EXPECT_EQ(golden_error(R"({"smddp_golden": "1"})"), "golden 'g.json': smddp_golden: expected 1, got \"1\"");
  EXPECT_EQ(golden_error(R"({"smddp_golden": 1, "fields": {"nccl": 5}})"), "golden 'g.json': fields.nccl: expected a string, got 5");
  EXPECT_EQ(golden_error(R"({"smddp_golden": 1, "fields": {"nccl": null}})"), "golden 'g.json': fields.nccl: expected a string, got null");
  EXPECT_EQ(golden_error(R"({"smddp_golden": 1, "fields": {"hostname": "a"}})").substr(0, 49), "golden 'g.json': fields: unknown field 'hostname'");
  EXPECT_EQ(golden_error(R"({"smddp_golden": 1, "env": {"PATH": "/bin"}})"),
            "golden 'g.json': env: 'PATH' is not a compared setting (NCCL_*, FI_*, SMDDP_*, RDMAV_*)");
  EXPECT_EQ(golden_error(R"({"smddp_golden": 1, "env": {"NCCL_PROTO": []}})"), "golden 'g.json': env.NCCL_PROTO: expected 1 to 64 alternatives");
  EXPECT_EQ(golden_error(R"({"smddp_golden": 1, "env": []})"), "golden 'g.json': env: expected an object");
  EXPECT_EQ(golden_error(R"({"smddp_golden": 1, "extra": 1})"),
            "golden 'g.json': unknown key 'extra' (expected smddp_golden, fields, env, learned, description)");
  EXPECT_EQ(golden_error(R"({"smddp_golden": 1, "env": {"NCCL_PROTO": "a", "NCCL_PROTO": "b"}})"), "golden 'g.json': duplicate key 'NCCL_PROTO'");
  for (const std::string& bad : {std::string(R"({"smddp_golden": 1,)"), std::string(R"({"smddp_golden": 1, "fields": {"nccl": ")")}) {
    EXPECT_EQ(golden_error(bad).find('\n'), std::string::npos) << bad;
  }
}

TEST(Golden, ComparisonNamesTheFieldAndUnlistedSettings) {
  Golden g = parse_golden(R"({"smddp_golden": 1, "fields": {"nccl": "2.21.*"}, "env": {"FI_PROVIDER": "efa"}})", "g.json");
  NodeView ok = resolve(node("a", {{"nccl", "2.21.5"}, {"kernel", "x"}}, {{{"FI_PROVIDER", "efa"}}}), {}, nullptr);
  EXPECT_TRUE(compare_golden(g, ok).empty());
  NodeView bad = resolve(node("a", {{"nccl", "2.18.1"}}, {{{"NCCL_DEBUG", "INFO"}}}), {}, nullptr);
  auto f = compare_golden(g, bad);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].text, "nccl 2.18.1 (golden g.json: 2.21.*)");
  EXPECT_EQ(f[1].text, "FI_PROVIDER unset (golden g.json: efa)");
  EXPECT_EQ(f[2].text, "NCCL_DEBUG=INFO (golden g.json: not listed, so unset)");
}

TEST(Golden, LearnedFileReadsBackAndMatches) {
  auto nodes = four("2.21.5", {});
  for (auto& n : nodes) n.ranks[0].env["FI_PROVIDER"] = "efa";
  Golden g = parse_golden(learn_golden(nodes, {}), "learned");
  EXPECT_EQ(golden_text(g.fields["nccl"]), "2.21.5");
  EXPECT_EQ(golden_text(g.env["FI_PROVIDER"]), "efa");
  for (const auto& n : nodes) EXPECT_TRUE(compare_golden(g, resolve(n, {}, nullptr)).empty());
  // Nodes that disagree teach nothing.
  EXPECT_THROW(learn_golden(four("2.18.1", {}), {}), Error);
  // An ignored setting may be anything or unset.
  nodes[0].ranks[0].env["SMDDP_JOB_TOKEN"] = "abc";
  Golden ig = parse_golden(learn_golden(nodes, {"SMDDP_JOB_*"}), "learned");
  EXPECT_EQ(golden_text(ig.env["SMDDP_JOB_TOKEN"]), "* or unset");
  for (const auto& n : nodes) EXPECT_TRUE(compare_golden(ig, resolve(n, {}, nullptr)).empty());
}

TEST(SettingsAdvice, TableRowsAreComplete) {
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& row : settings_advice()) {
    EXPECT_FALSE(row.advice.empty()) << row.setting;
    EXPECT_TRUE(row.source.starts_with("https://")) << row.setting;
    EXPECT_TRUE(seen.insert({std::string(row.setting), std::string(row.value)}).second) << row.setting << " twice";
    bool compared = false;
    for (auto p : compared_prefixes()) compared |= row.setting.starts_with(p);
    EXPECT_TRUE(compared) << row.setting << " is never gathered";
  }
}

TEST(SettingsAdvice, MatchesByNameValueAndCondition) {
  auto hits = advise({{"RDMAV_FORK_SAFE", "1"}, {"RDMAV_HUGEPAGES_SAFE", "1"}, {"FI_EFA_USE_DEVICE_RDMA", "1"},
                      {"NCCL_PROTO", "Simple"}, {"NCCL_LAUNCH_MODE", "PARALLEL"}, {"FI_PROVIDER", "efa"}},
                     true);
  ASSERT_EQ(hits.size(), 4u);
  EXPECT_EQ(hits[0].setting, "FI_EFA_USE_DEVICE_RDMA");
  EXPECT_EQ(hits[1].setting, "NCCL_PROTO");
  EXPECT_TRUE(hits[1].row->advice.find("1.5.0") != std::string_view::npos);  // the plugin row, case-insensitive
  EXPECT_EQ(hits[2].setting, "RDMAV_FORK_SAFE");
  EXPECT_TRUE(hits[2].row->advice.starts_with("never set it"));  // the exact row, before RDMAV_*
  EXPECT_EQ(hits[3].setting, "RDMAV_HUGEPAGES_SAFE");
  EXPECT_EQ(hits[3].row->setting, "RDMAV_*");
  // Without the plugin, NCCL_PROTO=simple gets NCCL's own advice; EFA-only rows stay quiet.
  auto plain = advise({{"NCCL_PROTO", "simple"}, {"NCCL_SOCKET_NTHREADS", "4"}}, false);
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_TRUE(plain[0].row->source.find("nvidia") != std::string_view::npos);
  EXPECT_TRUE(advise({{"NCCL_LAUNCH_MODE", "group"}}, false).size() == 1);
}

TEST(NodeFacts, Parsers) {
  EXPECT_EQ(driver_from_proc("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\nGCC version: gcc 11\n"),
            "535.104.05");
  EXPECT_EQ(driver_from_proc("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (dvs-builder)\n"), "550.54.15");
  EXPECT_EQ(driver_from_proc("nothing here"), "");
  EXPECT_EQ(efa_installer_from("# EFA installer version: 1.29.1\n# Debug packages installed: no\n"), "1.29.1");
  EXPECT_EQ(efa_installer_from("ibacm 46.0\n"), "");
  EXPECT_EQ(nccl_version_text(22105), "2.21.5");
  EXPECT_EQ(nccl_version_text(2804), "2.8.4");
  EXPECT_EQ(nccl_version_text(0), "unknown");
  EXPECT_EQ(ofi_nccl_version_in(std::string("\x7f" "ELF...Initializing aws-ofi-nccl 1.9.1-aws\0more", 45)), "1.9.1-aws");
  EXPECT_EQ(ofi_nccl_version_in("libnccl-net"), "");
}

}  // namespace
}  // namespace smddp::diag
