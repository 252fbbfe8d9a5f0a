// smddp::common's decimal grammar (smddp/common/numbers.h) and the CLI11
// helpers every tool applies to its numeric options (smddp/tools/cli_numbers.h):
// hexadecimal, octal-looking, infinite, NaN, overflowing and fractional
// text is refused with a reason instead of read as some other number.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "smddp/common/numbers.h"
#include "smddp/tools/cli_numbers.h"

namespace smddp {
namespace {

std::string why_number(const std::string& text) {
  std::string why;
  EXPECT_FALSE(common::parse_number(text, &why)) << text;
  return why;
}

std::string why_integer(const std::string& text) {
  std::string why;
  EXPECT_FALSE(common::parse_integer(text, &why)) << text;
  return why;
}

TEST(Numbers, DecimalNumbers) {
  EXPECT_EQ(common::parse_number("2"), 2.0);
  EXPECT_EQ(common::parse_number("-0.5"), -0.5);
  EXPECT_EQ(common::parse_number("+1.5"), 1.5);
  EXPECT_EQ(common::parse_number(".5"), 0.5);
  EXPECT_EQ(common::parse_number("5."), 5.0);
  EXPECT_EQ(common::parse_number("1e3"), 1000.0);
  EXPECT_EQ(common::parse_number("2.5E-1"), 0.25);
  EXPECT_EQ(common::parse_number(" 7 \n"), 7.0);
  EXPECT_EQ(common::parse_number("010"), 10.0);  // decimal, not octal
  EXPECT_EQ(common::parse_number("1e300"), 1e300);  // finite: ranges are the caller's
}

TEST(Numbers, RefusedNumbersSayWhy) {
  EXPECT_EQ(why_number(""), "empty");
  EXPECT_EQ(why_number("   "), "empty");
  EXPECT_EQ(why_number("0x10"), "hexadecimal");
  EXPECT_EQ(why_number("-0X1p4"), "hexadecimal");
  EXPECT_EQ(why_number("inf"), "not finite");
  EXPECT_EQ(why_number("-Infinity"), "not finite");
  EXPECT_EQ(why_number("nan"), "not finite");
  EXPECT_EQ(why_number("NaN(1)"), "not finite");
  EXPECT_EQ(why_number("1e999"), "out of range");
  EXPECT_EQ(why_number("-1e999"), "out of range");
  for (const char* bad : {"abc", "1e", "1e+", ".", "-", "1.2.3", "1,5", "12s", "1 2", "e5", "++1"}) {
    EXPECT_EQ(why_number(bad), "not a decimal number") << bad;
  }
}

TEST(Numbers, Integers) {
  EXPECT_EQ(common::parse_integer("0"), 0);
  EXPECT_EQ(common::parse_integer("-1"), -1);
  EXPECT_EQ(common::parse_integer("+42"), 42);
  EXPECT_EQ(common::parse_integer("010"), 10);
  EXPECT_EQ(common::parse_integer("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(common::parse_integer("-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(why_integer("9223372036854775808"), "out of range");
  EXPECT_EQ(why_integer("99999999999999999999999"), "out of range");
  EXPECT_EQ(why_integer("1.5"), "not a whole number");
  EXPECT_EQ(why_integer("1e3"), "not a whole number");
  EXPECT_EQ(why_integer("0x2"), "hexadecimal");
  EXPECT_EQ(why_integer("inf"), "not finite");
  EXPECT_EQ(why_integer(""), "empty");
  EXPECT_EQ(common::parse_unsigned("18446744073709551615"), UINT64_MAX);
  std::string why;
  EXPECT_FALSE(common::parse_unsigned("-1", &why));  // does not wrap to 2^64-1
  EXPECT_EQ(why, "negative");
  EXPECT_FALSE(common::parse_unsigned("18446744073709551616", &why));
  EXPECT_EQ(why, "out of range");
}

TEST(Numbers, Seconds) {
  EXPECT_EQ(common::parse_seconds("0", false), 0.0);
  EXPECT_EQ(common::parse_seconds("1e7", true), 1e7);
  EXPECT_EQ(common::parse_seconds("0.25", true), 0.25);
  std::string why;
  EXPECT_FALSE(common::parse_seconds("0", true, &why));
  EXPECT_EQ(why, "not above 0");
  EXPECT_FALSE(common::parse_seconds("-1", false, &why));
  EXPECT_EQ(why, "negative");
  EXPECT_FALSE(common::parse_seconds("1e300", false, &why));
  EXPECT_EQ(why, "more than 10000000 seconds");
  EXPECT_FALSE(common::parse_seconds("99999999999", false, &why));
  EXPECT_EQ(why, "more than 10000000 seconds");
  EXPECT_FALSE(common::parse_seconds("0x10", false, &why));
  EXPECT_EQ(why, "hexadecimal");
  EXPECT_EQ(common::seconds_problem(NAN, false), "not finite");
  EXPECT_EQ(common::seconds_problem(INFINITY, false), "not finite");
  // A deadline in int64 nanoseconds holds several of the longest waits.
  EXPECT_LT(4 * common::kMaxSeconds * 1e9, 9.2e18);
}

// A small app with every kind of numeric option, as the tools declare them.
struct Cli {
  CLI::App app{"test"};
  int iters = 1;
  unsigned ports = 0;
  uint64_t seed = 0;
  double factor = 1, timeout = 0, interval = 5;
  std::vector<int> list;
  std::string text;
  CLI::App* sub = nullptr;
  Cli() {
    app.add_option("-n,--iters", iters);
    app.add_option("--ports", ports);
    app.add_option("--seed", seed);
    app.add_option("-f", factor);
    app.add_option("--list", list);
    app.add_option("--text", text);
    tools::seconds_option(app.add_option("-T,--timeout", timeout));
    sub = app.add_subcommand("exporter");
    tools::seconds_option(sub->add_option("--interval", interval), true);
    tools::decimal_numbers_only(app);
  }
  // "" when parsed, else the error's text.
  std::string parse(std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());  // CLI11 takes them in reverse
    try {
      app.parse(args);
      return "";
    } catch (const CLI::ParseError& e) {
      return e.what();
    }
  }
};

TEST(CliNumbers, DecimalOptionsParse) {
  Cli c;
  ASSERT_EQ(c.parse({"-n", "010", "--ports", "7", "--seed", "18446744073709551615", "-f", "1e3", "--list", "1", "02",
                     "--text", "0x10", "-T", "1e7", "exporter", "--interval", "0.5"}), "");
  EXPECT_EQ(c.iters, 10);  // not 8 (strtol base 0 would read octal)
  EXPECT_EQ(c.ports, 7u);
  EXPECT_EQ(c.seed, UINT64_MAX);
  EXPECT_EQ(c.factor, 1000.0);
  EXPECT_EQ(c.list, (std::vector<int>{1, 2}));
  EXPECT_EQ(c.text, "0x10");  // text options are not numbers
  EXPECT_EQ(c.timeout, 1e7);
  EXPECT_EQ(c.interval, 0.5);
}

TEST(CliNumbers, RefusedWithOneLineNamingTheOption) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"-n", "0x2"}, "-n/--iters '0x2': hexadecimal; expected a whole decimal number"},
      {{"-n", "1.5"}, "-n/--iters '1.5': not a whole number; expected a whole decimal number"},
      {{"-n", "99999999999999999999"}, "-n/--iters '99999999999999999999': out of range; expected a whole decimal number"},
      {{"--seed", "-1"}, "--seed '-1': negative; expected a whole decimal number >= 0"},
      {{"-f", "inf"}, "-f 'inf': not finite; expected a decimal number"},
      {{"-f", "nan"}, "-f 'nan': not finite; expected a decimal number"},
      {{"-f", "1e999"}, "-f '1e999': out of range; expected a decimal number"},
      {{"--list", "1", "0x3"}, "--list '0x3': hexadecimal; expected a whole decimal number"},
      {{"-T", "0x10"}, "-T/--timeout '0x10': hexadecimal; expected a decimal number"},
      {{"-T", "1e300"}, "-T/--timeout '1e300': more than 10000000 seconds; expected seconds 0..10000000"},
      {{"-T", "99999999999"}, "-T/--timeout '99999999999': more than 10000000 seconds; expected seconds 0..10000000"},
      {{"-T", "-1"}, "-T/--timeout '-1': negative; expected seconds 0..10000000"},
      {{"exporter", "--interval", "0"}, "--interval '0': not above 0; expected seconds > 0, at most 10000000"},
      {{"exporter", "--interval", "0x10"}, "--interval '0x10': hexadecimal; expected a decimal number"},
  };
  for (const auto& [args, expected] : cases) {
    Cli c;
    const std::string what = c.parse(args);
    EXPECT_EQ(what, expected) << args.front();
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace smddp
