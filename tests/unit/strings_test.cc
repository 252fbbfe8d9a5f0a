// smddp::common's string helpers, the one copy the engine and the tools share.
#include "smddp/common/strings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace smddp::common {
namespace {

using Items = std::vector<std::string>;

TEST(Strings, TrimStripsCLocaleWhitespace) {
  EXPECT_EQ(trim(" \t a b \n\r\v\f"), "a b");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim("   "), "");
  EXPECT_EQ(trim("x"), "x");
  EXPECT_EQ(trim_end("  1\n"), "  1");
  EXPECT_EQ(trim_end("\n"), "");
  EXPECT_FALSE(is_space('\0'));
  EXPECT_FALSE(is_space('x'));
}

TEST(Strings, SplitTrimsAndDropsEmptyItems) {
  EXPECT_EQ(split("a,b,c", ','), (Items{"a", "b", "c"}));
  EXPECT_EQ(split(" a, ,b ,", ','), (Items{"a", "b"}));
  EXPECT_EQ(split(",,", ','), Items{});
  EXPECT_EQ(split("", ','), Items{});
  EXPECT_EQ(split("one", ','), Items{"one"});
  EXPECT_EQ(split("x\ny\n", '\n'), (Items{"x", "y"}));
  EXPECT_EQ(split("0-3, 8", ','), (Items{"0-3", "8"}));
}

TEST(Strings, JoinCaseAndBrackets) {
  EXPECT_EQ(join({"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(join({}, ", "), "");
  EXPECT_EQ(join({"a"}, ", "), "a");
  EXPECT_EQ(to_lower("AllReduce_1"), "allreduce_1");
  EXPECT_EQ(to_upper("allreduce"), "ALLREDUCE");
  EXPECT_EQ(to_lower("\xC3\x89"), "\xC3\x89");  // bytes above ASCII unchanged
  EXPECT_EQ(strip_brackets("[::1]"), "::1");
  EXPECT_EQ(strip_brackets("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(strip_brackets("[]"), "");
  EXPECT_EQ(strip_brackets("["), "[");
}

}  // namespace
}  // namespace smddp::common
