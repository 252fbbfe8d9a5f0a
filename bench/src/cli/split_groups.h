// Split groups, as nccl-tests 2.19 makes them (docs/bench.md, "Split
// groups"): every rank gets a colour from its global rank and one rule, the
// ranks of a colour form a group, and every group runs the same collective
// on its own communicator, all groups at once.
//
// NCCL_TESTS_SPLIT is `<op><value>`: op AND, OR, MOD or DIV (any case) or
// &, |, %, /; blanks may stand between the two; the value is decimal, hex
// (0x...) or binary (0b...). colour = rank op value.
// NCCL_TESTS_SPLIT_MASK=V is AND V, V read as hexadecimal (0x optional) as
// nccl-tests' code reads it.
//
// nccl-tests reads what it cannot parse as colour 0 (one group), ignores
// trailing text, reads "010" as octal and divides by zero on "MOD 0"; these
// are refused here with a reason instead. So is a mask that nccl-tests'
// code and README read differently ("10": 16 in its code, 10 by its README;
// "0b11": hexadecimal 0xb11 in its code).
//
// This file is the one reader of both variables; hex and binary are taken
// here only (every other number of ours is decimal, smddp/common/numbers.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace smddp::bench {

struct SplitRule {
  enum class Op { And, Or, Mod, Div };
  Op op = Op::And;
  int value = 0;        // 0..INT_MAX; never 0 for MOD and DIV
  std::string setting;  // as given: NCCL_TESTS_SPLIT="MOD 2"

  // The group of global rank `rank` (>= 0): never negative.
  int color(int rank) const;
};

// NCCL_TESTS_SPLIT's value. Throws UsageError naming the variable and why.
SplitRule parse_split(std::string_view text);
// NCCL_TESTS_SPLIT_MASK's value (an AND). Throws UsageError likewise.
SplitRule parse_split_mask(std::string_view text);

// The rule the two variables set (values as getenv gives them, null when
// unset): nullopt when neither is; UsageError for a bad value or both set.
std::optional<SplitRule> split_rule(const char* split, const char* mask);

}  // namespace smddp::bench
