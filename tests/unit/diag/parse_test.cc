// Parsers: the XML reader, sizes, bus ids, CPU masks, profiles.
#include <gtest/gtest.h>

#include "preflight/cluster.h"
#include "preflight/profile.h"
#include "shared/text.h"
#include "shared/xml.h"
#include "smddp/common/sizes.h"
#include "smddp/error.h"

namespace smddp::diag {
namespace {

TEST(Xml, ElementsAttributesAndLines) {
  XmlElement root = parse_xml("<?xml version=\"1.0\"?>\n<!-- c -->\n<system version='1'>\n  <cpu numaid=\"0\" note=\"a&amp;b\">\n"
                              "    <pci busid=\"0000:10:00.0\"/>\n  </cpu>\n</system>\n");
  EXPECT_EQ(root.name, "system");
  ASSERT_EQ(root.children.size(), 1u);
  const XmlElement& cpu = root.children[0];
  EXPECT_EQ(cpu.line, 4);
  EXPECT_EQ(*cpu.attribute("note"), "a&b");
  EXPECT_EQ(cpu.children.at(0).line, 5);
  EXPECT_EQ(cpu.attribute("missing"), nullptr);
}

TEST(Xml, MalformedInputNamesTheLine) {
  auto message = [](const char* text) {
    try {
      parse_xml(text);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("<a>\n<b>\n</a>"), "line 3: malformed XML: </a> closes <b> opened on line 2");
  EXPECT_EQ(message(""), "line 1: malformed XML: no root element (empty document)");
  EXPECT_EQ(message("<a x=1/>"), "line 1: malformed XML: value of attribute 'x' is not quoted");
  EXPECT_EQ(message("<a x='1' x='2'/>"), "line 1: malformed XML: attribute 'x' repeated in <a>");
  EXPECT_EQ(message("<a/><b/>"), "line 1: malformed XML: content after the root element </a>");
  EXPECT_EQ(message("<a>&bogus;</a>"), "line 1: malformed XML: unknown entity &bogus;");
  EXPECT_EQ(message("<a>\n\n"), "line 3: malformed XML: element <a> (line 1) is never closed");
}

TEST(Text, SizesBusIdsMasks) {
  // Sizes are common::parse_size (tests/unit/sizes_test.cc); diag's
  // "10GB" was 10^10 bytes and is now 10 GiB, as in smddp-bench.
  EXPECT_EQ(common::parse_size("1.5 GiB"), 3ull << 29);
  EXPECT_EQ(common::parse_size("10GB"), 10ull << 30);
  EXPECT_EQ(normalize_busid("00000000:10:1C.0"), "0000:10:1c.0");
  EXPECT_EQ(normalize_busid("10:1c.0"), "0000:10:1c.0");
  EXPECT_FALSE(normalize_busid("10-1c"));
  EXPECT_FALSE(normalize_busid("0000:10:40.0"));  // device > 31
  EXPECT_EQ(cpu_mask_to_list("000000ff,ffff0000,00ffffff"), "0-23,48-71");
  EXPECT_EQ(cpu_mask_to_list("0"), "");
  EXPECT_FALSE(cpu_mask_to_list("xyz"));
  EXPECT_EQ(format_bytes(64ull << 20), "64 MiB");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("node-1.x"), "node-1.x");
}

TEST(Profile, DefaultsTypesAndOrder) {
  Profile p = parse_profile(
      "name: t\nchecks:\n  link_bandwidth: {provider: tcp}\n  memlock: {min: unlimited}\n  gpu_temperature: {max_celsius: 85}\n"
      "  shm_size: {min: 1GiB}\n",
      "t.yaml");
  ASSERT_EQ(p.checks.size(), 4u);
  EXPECT_EQ(p.checks[0].spec->name, "gpu_temperature");  // table order, not file order
  EXPECT_EQ(p.checks[0].params.number("max_celsius"), 85);
  EXPECT_FALSE(p.checks[1].params.size("min"));  // unlimited
  EXPECT_EQ(p.checks[2].params.string("path"), "/dev/shm");
  EXPECT_EQ(p.checks[2].params.size("min"), 1ull << 30);
  EXPECT_EQ(p.checks[3].params.size("bytes"), 4ull << 20);
  EXPECT_EQ(p.checks[3].params.integer("window"), 16);
}

TEST(Profile, ErrorsAreOneLineWithTheLine) {
  auto message = [](const std::string& text) {
    try {
      parse_profile(text, "p.yaml");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("checks:\n  gpu_temperature: {max_celsius: hot}\n"),
            "profile 'p.yaml': line 2: checks.gpu_temperature.max_celsius: expected a number, got 'hot'");
  EXPECT_EQ(message("checks:\n  memlock: {}\n"), "profile 'p.yaml': line 2: checks.memlock: missing required parameter 'min' "
                                                  "(least RLIMIT_MEMLOCK, or unlimited)");
  EXPECT_NE(message("checks: [a\n").find("malformed YAML"), std::string::npos);
  EXPECT_NE(message("checks:\n  nope: {}\n").find("line 2: unknown check 'nope'"), std::string::npos);
  EXPECT_NE(message("checks:\n  gpu_ecc: {counter: sometimes}\n").find("counter must be volatile or aggregate"), std::string::npos);
}

TEST(Profile, ShippedProfilesLoad) {
  for (const char* name : {"local", "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge"}) {
    Profile p = load_profile(name);
    EXPECT_EQ(p.name, name);
    EXPECT_EQ(p.checks.size(), name == std::string("local") ? 15u : 16u) << name;  // consistency in every profile
  }
  EXPECT_EQ(load_profile("p5.48xlarge").checks[6].params.integer("expected"), 32);  // efa_count
}

TEST(Blame, UnreachableRanks) {
  std::vector<std::string> hosts = {"a", "b", "c", "d"};
  // Rank 2 answers nobody; its own report (it heard everyone) does not matter.
  auto blame = blame_unreachable({std::vector<int>{2}, std::vector<int>{2}, std::vector<int>{}, std::vector<int>{2}}, hosts);
  ASSERT_EQ(blame.size(), 1u);
  EXPECT_EQ(blame.at(2), "rank 2 (c) unreachable: no answer to 3 of 3 ranks");
  // Rank 3 hears nobody (its receive side is broken): only rank 3 is blamed.
  blame = blame_unreachable({std::vector<int>{}, std::vector<int>{}, std::vector<int>{}, std::vector<int>{0, 1, 2}}, hosts);
  ASSERT_EQ(blame.size(), 1u);
  EXPECT_EQ(blame.at(3), "rank 3 (d) heard no answer from 3 of 3 ranks");
  // Two ranks: the silent one is unreachable, the other is fine.
  blame = blame_unreachable({std::vector<int>{1}, std::vector<int>{}}, {"a", "b"});
  ASSERT_EQ(blame.size(), 1u);
  EXPECT_EQ(blame.at(1), "rank 1 (b) unreachable: no answer to 1 of 1 ranks");
  // One broken link between 0 and 1.
  blame = blame_unreachable({std::vector<int>{1}, std::vector<int>{0}, std::vector<int>{}, std::vector<int>{}}, hosts);
  EXPECT_EQ(blame.at(0), "rank 0 (a) gave no answer to rank(s) 1");
  EXPECT_EQ(blame.at(1), "rank 1 (b) gave no answer to rank(s) 0");
  // A rank that sent no report at all.
  blame = blame_unreachable({std::vector<int>{}, std::nullopt, std::vector<int>{}, std::vector<int>{}}, hosts);
  EXPECT_EQ(blame.at(1), "rank 1 (b) sent no reachability report in time");
}

}  // namespace
}  // namespace smddp::diag
