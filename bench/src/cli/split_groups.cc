#include "cli/split_groups.h"

#include <array>
#include <climits>

#include "smddp/common/strings.h"
#include "smddp/error.h"

namespace smddp::bench {
namespace {

constexpr const char* kSplit = "NCCL_TESTS_SPLIT";
constexpr const char* kMask = "NCCL_TESTS_SPLIT_MASK";
constexpr const char* kSplitGrammar =
    "expected <op><value>: op AND, OR, MOD, DIV (or &, |, %, /), value decimal, 0x hex or 0b binary, e.g. \"MOD 2\"";

[[noreturn]] void refuse(const char* variable, std::string_view text, const std::string& why, const char* expected) {
  throw UsageError(std::string(variable) + "='" + std::string(text) + "': " + why + "; " + expected);
}

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

// Digits of `base`, at least one, nothing else; the value at most INT_MAX.
// "" when fine, else why not.
std::string read_digits(std::string_view digits, int base, int* out) {
  if (digits.empty()) return "no digits";
  long long v = 0;
  for (char c : digits) {
    const int d = digit_value(c);
    if (d >= base) return "'" + std::string(1, c) + "' is not a " + (base == 2 ? "binary" : base == 16 ? "hex" : "decimal") + " digit";
    v = v * base + d;
    if (v > INT_MAX) return "more than " + std::to_string(INT_MAX);
  }
  *out = static_cast<int>(v);
  return "";
}

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && common::to_upper(text.substr(0, prefix.size())) == prefix;
}

}  // namespace

int SplitRule::color(int rank) const {
  switch (op) {
    case Op::And: return rank & value;
    case Op::Or: return rank | value;
    case Op::Mod: return rank % value;
    case Op::Div: return rank / value;
  }
  return 0;
}

SplitRule parse_split(std::string_view given) {
  const std::string_view text = common::trim(given);
  if (text.empty()) refuse(kSplit, given, "empty", kSplitGrammar);
  struct Name {
    std::string_view word, symbol;
    SplitRule::Op op;
  };
  constexpr std::array<Name, 4> kOps = {{{"AND", "&", SplitRule::Op::And},
                                         {"OR", "|", SplitRule::Op::Or},
                                         {"MOD", "%", SplitRule::Op::Mod},
                                         {"DIV", "/", SplitRule::Op::Div}}};
  SplitRule rule;
  std::string_view rest;
  bool found = false;
  for (const Name& n : kOps) {
    for (std::string_view name : {n.word, n.symbol}) {
      if (!found && starts_with_nocase(text, name)) {
        rule.op = n.op;
        rest = common::trim(text.substr(name.size()));
        found = true;
      }
    }
  }
  if (!found) refuse(kSplit, given, "unknown operation", kSplitGrammar);
  if (rest.empty()) refuse(kSplit, given, "no value after the operation", kSplitGrammar);
  int base = 10;
  std::string_view digits = rest;
  if (starts_with_nocase(rest, "0X")) {
    base = 16;
    digits = rest.substr(2);
  } else if (starts_with_nocase(rest, "0B")) {
    base = 2;
    digits = rest.substr(2);
  } else if (rest.size() > 1 && rest[0] == '0') {
    // nccl-tests reads a leading 0 as octal ("010" is 8): not what it looks like.
    refuse(kSplit, given, "a leading 0 reads as octal in nccl-tests", kSplitGrammar);
  }
  if (std::string why = read_digits(digits, base, &rule.value); !why.empty()) refuse(kSplit, given, why, kSplitGrammar);
  if ((rule.op == SplitRule::Op::Mod || rule.op == SplitRule::Op::Div) && rule.value == 0) {
    refuse(kSplit, given, std::string(rule.op == SplitRule::Op::Mod ? "MOD" : "DIV") + " 0 divides by zero",
           kSplitGrammar);
  }
  rule.setting = std::string(kSplit) + "=\"" + std::string(given) + "\"";
  return rule;
}

SplitRule parse_split_mask(std::string_view given) {
  constexpr const char* expected =
      "expected a hexadecimal mask (0x optional), as nccl-tests reads it, e.g. 0x1; or NCCL_TESTS_SPLIT=\"AND <value>\"";
  const std::string_view text = common::trim(given);
  if (text.empty()) refuse(kMask, given, "empty", expected);
  std::string_view digits = text;
  const bool prefixed = starts_with_nocase(text, "0X");
  if (prefixed) {
    digits = text.substr(2);
  } else if (starts_with_nocase(text, "0B")) {
    refuse(kMask, given, "nccl-tests' code reads this as the hex number 0x" + std::string(text.substr(1)) +
                             ", its README as binary", expected);
  }
  SplitRule rule;
  if (std::string why = read_digits(digits, 16, &rule.value); !why.empty()) refuse(kMask, given, why, expected);
  // Decimal digits alone, 10 or more: nccl-tests' code reads them as hex, its README as decimal.
  if (!prefixed && digits.find_first_not_of("0123456789") == std::string_view::npos && rule.value > 9) {
    refuse(kMask, given, "nccl-tests' code reads this as hex (" + std::to_string(rule.value) + "), its README as decimal",
           expected);
  }
  rule.op = SplitRule::Op::And;
  rule.setting = std::string(kMask) + "=" + std::string(given);
  return rule;
}

std::optional<SplitRule> split_rule(const char* split, const char* mask) {
  if (split && mask) {
    throw UsageError(std::string(kSplit) + " and " + kMask +
                     " are both set (nccl-tests would silently use the mask alone); set one of them");
  }
  if (mask) return parse_split_mask(mask);
  if (split) return parse_split(split);
  return std::nullopt;
}

}  // namespace smddp::bench
