// NCCL_TESTS_SPLIT and NCCL_TESTS_SPLIT_MASK (bench/src/cli/split_groups.h):
// the colour rule against every example of nccl-tests 2.19's README, its
// shorthands and spellings, and the values refused with one line.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/split_groups.h"
#include "smddp/error.h"

namespace smddp::bench {
namespace {

std::vector<int> colors(const SplitRule& rule, int nranks) {
  std::vector<int> out;
  for (int r = 0; r < nranks; ++r) out.push_back(rule.color(r));
  return out;
}

// The groups a colouring makes: sets of ranks, whatever the colours are called.
std::set<std::set<int>> groups(const std::vector<int>& colors) {
  std::map<int, std::set<int>> by_color;
  for (int r = 0; r < static_cast<int>(colors.size()); ++r) by_color[colors[r]].insert(r);
  std::set<std::set<int>> out;
  for (const auto& [c, ranks] : by_color) out.insert(ranks);
  return out;
}

std::set<std::set<int>> groups_of(const std::string& split, int nranks) {
  return groups(colors(parse_split(split), nranks));
}

// README: `AND 0x7` or `MOD 8`: on systems of 8 GPUs, 8 parallel operations,
// each with 1 GPU per node (two nodes of 8 ranks here).
TEST(SplitGroups, ReadmeAnd7OrMod8IsOneRankPerNode) {
  const int n = 16;
  EXPECT_EQ(colors(parse_split("AND 0x7"), n), colors(parse_split("MOD 8"), n));
  const auto g = groups_of("AND 0x7", n);
  ASSERT_EQ(g.size(), 8u);
  for (const auto& ranks : g) {
    ASSERT_EQ(ranks.size(), 2u);
    EXPECT_EQ(*ranks.begin() / 8, 0);   // one on the first node
    EXPECT_EQ(*ranks.rbegin() / 8, 1);  // one on the second
  }
}

// README: `OR 0x7` or `DIV 8`: one operation per node, purely intra-node.
TEST(SplitGroups, ReadmeOr7OrDiv8IsOneGroupPerNode) {
  const int n = 16;
  const std::set<std::set<int>> per_node = {{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}};
  EXPECT_EQ(groups_of("OR 0x7", n), per_node);
  EXPECT_EQ(groups_of("DIV 8", n), per_node);
  EXPECT_EQ(colors(parse_split("OR 0x7"), n)[0], 7);  // the colour is rank | 7
  EXPECT_EQ(colors(parse_split("DIV 8"), n)[15], 1);
}

// README: `AND 0x1` or `MOD 2`: two operations, each using every other rank.
TEST(SplitGroups, ReadmeAnd1OrMod2IsEveryOtherRank) {
  const int n = 6;
  EXPECT_EQ(colors(parse_split("AND 0x1"), n), (std::vector<int>{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(colors(parse_split("MOD 2"), n), (std::vector<int>{0, 1, 0, 1, 0, 1}));
}

// README: NCCL_TESTS_SPLIT_MASK="<value>" is NCCL_TESTS_SPLIT="&<value>"
// (its value hexadecimal, as nccl-tests' code reads it).
TEST(SplitGroups, ReadmeMaskIsAnd) {
  for (const char* v : {"0x1", "0x7", "1", "7", "0xF", "f", "0x10"}) {
    EXPECT_EQ(colors(parse_split_mask(v), 40), colors(parse_split(std::string("&") + (v[0] == '0' ? "" : "0x") + v), 40))
        << v;
  }
  EXPECT_EQ(parse_split_mask("f").value, 15);
  EXPECT_EQ(parse_split_mask("0x10").value, 16);
}

// README: the symbols &, |, %, /; decimal, hex and binary values. nccl-tests
// compares the operation without case and needs no blank before the value.
TEST(SplitGroups, ShorthandsAndSpellings) {
  const int n = 12;
  EXPECT_EQ(colors(parse_split("& 3"), n), colors(parse_split("AND 3"), n));
  EXPECT_EQ(colors(parse_split("|3"), n), colors(parse_split("OR 3"), n));
  EXPECT_EQ(colors(parse_split("%3"), n), colors(parse_split("MOD 3"), n));
  EXPECT_EQ(colors(parse_split("/ 3"), n), colors(parse_split("DIV 3"), n));
  EXPECT_EQ(parse_split("mod 0b101").value, 5);
  EXPECT_EQ(parse_split("Div0X1a").value, 26);
  EXPECT_EQ(parse_split("  AND   0 ").value, 0);  // every rank in group 0
  EXPECT_EQ(parse_split("MOD 2").setting, "NCCL_TESTS_SPLIT=\"MOD 2\"");
  EXPECT_EQ(parse_split("DIV 2").op, SplitRule::Op::Div);
}

// Bad values: one line each, naming the variable.
TEST(SplitGroups, BadValuesAreRefused) {
  for (const char* v : {"", "   ", "XOR 2", "MOD", "MOD 0", "DIV 0", "/0x0", "MOD 2x", "MOD 2 3", "AND 0x", "AND 0b2",
                        "AND 0x7g", "MOD 2147483648", "MOD 99999999999999999999", "MOD -2", "MOD +2", "MOD 010",
                        "MODULO 2", "AND 1.5"}) {
    try {
      parse_split(v);
      ADD_FAILURE() << "accepted NCCL_TESTS_SPLIT='" << v << "'";
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("NCCL_TESTS_SPLIT='", 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  EXPECT_EQ(parse_split("MOD 2147483647").value, 2147483647);
  // A mask nccl-tests' code and README read differently is refused; so is junk.
  for (const char* v : {"", "10", "0b11", "0x", "0xg", "1 2", "-1", "0x80000000"}) {
    EXPECT_THROW(parse_split_mask(v), UsageError) << v;
  }
  EXPECT_THROW(split_rule("MOD 2", "0x1"), UsageError);
  EXPECT_FALSE(split_rule(nullptr, nullptr));
  EXPECT_EQ(split_rule(nullptr, "0x3")->value, 3);
  EXPECT_EQ(split_rule("DIV 4", nullptr)->op, SplitRule::Op::Div);
}

}  // namespace
}  // namespace smddp::bench
