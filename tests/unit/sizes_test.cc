// smddp::common::parse_size: one meaning of K/M/G for every tool, setting and
// file (docs/bench.md#sizes). tests/unit/diag/size_grammar_test.cc feeds the
// same strings through each of those entry points.
#include <gtest/gtest.h>

#include "smddp/common/sizes.h"
#include "smddp/error.h"
#include "smddp/tools/sizes.h"

namespace smddp::common {
namespace {

TEST(Sizes, BinaryUnitsAsInNcclTests) {
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("8B"), 8u);
  EXPECT_EQ(parse_size("8K"), 8192u);
  EXPECT_EQ(parse_size("8k"), 8192u);
  EXPECT_EQ(parse_size("16M"), 16ull << 20);
  EXPECT_EQ(parse_size("16m"), 16ull << 20);
  EXPECT_EQ(parse_size("1G"), 1ull << 30);
  EXPECT_EQ(parse_size("2T"), 2ull << 40);
  EXPECT_EQ(parse_size("3P"), 3ull << 50);
  EXPECT_EQ(parse_size("7E"), 7ull << 60);
}

TEST(Sizes, KbAndKibMeanTheSame) {
  EXPECT_EQ(parse_size("1KB"), 1024u);
  EXPECT_EQ(parse_size("1KiB"), 1024u);
  EXPECT_EQ(parse_size("64MB"), 64ull << 20);
  EXPECT_EQ(parse_size("64MiB"), 64ull << 20);
  EXPECT_EQ(parse_size("10GB"), 10ull << 30);  // diag read this as 10^10 before
  EXPECT_EQ(parse_size("10GiB"), 10ull << 30);
  EXPECT_EQ(parse_size("1TB"), 1ull << 40);
}

TEST(Sizes, SpacesAndDecimals) {
  EXPECT_EQ(parse_size(" 64 MiB "), 64ull << 20);
  EXPECT_EQ(parse_size("1.5GiB"), 3ull << 29);
  EXPECT_EQ(parse_size("1.5 G"), 3ull << 29);
  EXPECT_EQ(parse_size("0.5K"), 512u);
  EXPECT_EQ(parse_size(".5K"), 512u);
  EXPECT_EQ(parse_size("2.K"), 2048u);
  EXPECT_FALSE(parse_size("1.5"));   // half a byte
  EXPECT_FALSE(parse_size("0.3K"));  // 307.2 bytes
  EXPECT_FALSE(parse_size("1.2.3K"));
}

TEST(Sizes, ExponentsAsInNcclTests) {
  EXPECT_EQ(parse_size("1e3"), 1000u);
  EXPECT_EQ(parse_size("1E3"), 1000u);
  EXPECT_EQ(parse_size("2.5e6"), 2500000u);
  EXPECT_EQ(parse_size("1e+3"), 1000u);
  EXPECT_EQ(parse_size("5000e-3"), 5u);
  EXPECT_EQ(parse_size("1e3K"), 1024000u);
  EXPECT_EQ(parse_size("0e999"), 0u);
  EXPECT_EQ(parse_size("9e18"), 9000000000000000000u);
  EXPECT_EQ(parse_size("7E"), 7ull << 60);  // still exbibytes
  EXPECT_EQ(parse_size("1EiB"), 1ull << 60);
  EXPECT_FALSE(parse_size("1e-3"));   // a fraction of a byte
  EXPECT_FALSE(parse_size("1e19"));   // past 2^63 - 1
  EXPECT_FALSE(parse_size("1e300"));
  EXPECT_FALSE(parse_size("1e99999999"));
  EXPECT_FALSE(parse_size("1e-99999"));
}

TEST(Sizes, OverflowRefused) {
  EXPECT_EQ(parse_size("9223372036854775807"), kMaxSize);
  EXPECT_FALSE(parse_size("9223372036854775808"));
  EXPECT_FALSE(parse_size("18446744073709551616"));
  EXPECT_FALSE(parse_size("99999999999999999999999999999999"));
  EXPECT_FALSE(parse_size("8E"));
  EXPECT_FALSE(parse_size("16E"));
  EXPECT_FALSE(parse_size("8589934592G"));  // 2^63
  EXPECT_EQ(parse_size("8589934591G"), (8589934591ull << 30));
}

TEST(Sizes, NegativeAndJunkRefused) {
  for (const char* bad : {"", " ", "-1", "-1M", "+1M", "K", "M", ".", "lots", "12Q", "1 2", "1KK", "1Kb", "1kib",
                          "1b", "0x10", "1e3x", "1e-", "1e+", "1GiBs", "1 G B"}) {
    EXPECT_FALSE(parse_size(bad)) << "'" << bad << "'";
  }
}

TEST(Sizes, RefusalsSayWhy) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "empty"},
      {"  ", "empty"},
      {"-1M", "negative"},
      {"+1M", "signed"},
      {"0x10", "hexadecimal"},
      {"0X1p4", "hexadecimal"},
      {"nan", "not a number"},
      {"NaN", "not a number"},
      {"inf", "not a number"},
      {"Infinity", "not a number"},
      {"K", "no number"},
      {"12Q", "unknown unit 'Q'"},
      {"1 G B", "unknown unit 'G B'"},
      {"1.5", "not a whole number of bytes"},
      {"0.3K", "not a whole number of bytes"},
      {"1e-99999", "not a whole number of bytes"},
      {"1.0000000000000000001", "more than 18 decimals"},
      {"8E", "more than 2^63-1 bytes"},
      {"1e99999", "more than 2^63-1 bytes"},
      {"9223372036854775808", "more than 2^63-1 bytes"},
      {"99999999999999999999999999999999999999999", "more than 2^63-1 bytes"},
  };
  for (const auto& [text, reason] : cases) {
    std::string why = "unset";
    EXPECT_FALSE(parse_size(text, &why)) << "'" << text << "'";
    EXPECT_EQ(why, reason) << "'" << text << "'";
  }
  std::string why = "unset";
  EXPECT_EQ(parse_size("0e99999", &why), 0u);  // zero times anything
  EXPECT_EQ(why, "unset");                      // left alone on success
}

TEST(Sizes, OrThrowNamesTheFlagAndTheReason) {
  EXPECT_EQ(parse_size_or_throw("32M", "-b"), 32ull << 20);
  try {
    parse_size_or_throw("0x10", "-b/--minbytes");
    FAIL() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "-b/--minbytes '0x10': hexadecimal; expected a byte count like 8, 4K, 1.5M or 64 MiB "
              "(docs/bench.md#sizes)");
  }
}

TEST(Sizes, OldHeaderNamesTheSameFunction) {
  // smddp/tools/sizes.h forwards to this one: no second grammar behind it.
  EXPECT_EQ(&tools::parse_size, &parse_size);
  EXPECT_EQ(tools::kMaxSize, kMaxSize);
}

}  // namespace
}  // namespace smddp::common
