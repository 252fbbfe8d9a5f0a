// SMDDP_TEST_FLIP (collectives/src/test_flip.h): the strict RANK:CALL:ELEMENT:BIT
// grammar, its refusals through config::check (one line naming the setting),
// and the flip itself: the named bit of the named element of the receive
// buffer, only where that element is this rank's output.
#include "test_flip.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "smddp/config.h"
#include "smddp/error.h"

namespace smddp {
namespace {

TEST(TestFlip, ParsesFourDecimalFields) {
  const auto f = parse_test_flip("1:120:5:3");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->rank, 1);
  EXPECT_EQ(f->call, 120u);
  EXPECT_EQ(f->element, 5u);
  EXPECT_EQ(f->bit, 3u);
  const auto g = parse_test_flip("2147483647:9223372036854775807:0:63");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->rank, 2147483647);
  EXPECT_EQ(g->bit, 63u);
}

TEST(TestFlip, RefusesAnythingElseSayingWhy) {
  const std::pair<const char*, const char*> bad[] = {
      {"", "RANK:CALL:ELEMENT:BIT"},
      {"1:2:3", "RANK:CALL:ELEMENT:BIT"},
      {"1:2:3:4:5", "RANK:CALL:ELEMENT:BIT"},
      {"1::3:4", "CALL '': empty"},
      {"1:2:3:4:", "RANK:CALL:ELEMENT:BIT"},
      {"-1:2:3:4", "RANK:CALL:ELEMENT:BIT"},
      {"+1:2:3:4", "RANK:CALL:ELEMENT:BIT"},
      {" 1:2:3:4", "RANK:CALL:ELEMENT:BIT"},
      {"0x1:2:3:4", "RANK:CALL:ELEMENT:BIT"},
      {"1:2.5:3:4", "RANK:CALL:ELEMENT:BIT"},
      {"1:0:3:4", "CALL 0: expected 1.."},
      {"1:2:3:64", "BIT 64: expected 0..63"},
      {"2147483648:2:3:4", "RANK 2147483648"},
      {"1:99999999999999999999:3:4", "CALL '99999999999999999999': out of range"},
      {"1:9223372036854775808:3:4", "CALL 9223372036854775808"},
  };
  for (const auto& [text, why] : bad) {
    std::string w;
    EXPECT_FALSE(parse_test_flip(text, &w)) << text;
    EXPECT_NE(w.find(why), std::string::npos) << text << ": " << w;
  }
}

TEST(TestFlip, ConfigCheckRefusesABadValueWithOneLine) {
  setenv("SMDDP_TEST_FLIP", "1:0:3:4", 1);
  std::string what;
  try {
    config::check(config::kEngine);
  } catch (const UsageError& e) {
    what = e.what();
  }
  EXPECT_EQ(what.rfind("SMDDP_TEST_FLIP='1:0:3:4': CALL 0", 0), 0u) << what;
  EXPECT_EQ(what.find('\n'), std::string::npos);
  EXPECT_THROW(test_flip_from_environment(), UsageError);
  setenv("SMDDP_TEST_FLIP", "3:7:1:2", 1);
  const auto f = test_flip_from_environment();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->rank, 3);
  unsetenv("SMDDP_TEST_FLIP");
  EXPECT_FALSE(test_flip_from_environment());
}

TEST(TestFlip, FlipsTheNamedBitOfTheNamedElementOnly) {
  std::vector<uint16_t> recv(8, 0x3c00);  // float16 1.0
  const std::vector<uint16_t> before = recv;
  CollectiveArgs a{Collective::AllReduce, nullptr, recv.data(), recv.size(), DataType::Float16, ReduceOp::Sum, 0};
  EXPECT_TRUE(apply_test_flip({0, 1, 6, 9}, a, 0, 2));
  for (size_t i = 0; i < recv.size(); ++i) EXPECT_EQ(recv[i], i == 6 ? (0x3c00 ^ (1u << 9)) : 0x3c00) << i;
  EXPECT_TRUE(apply_test_flip({0, 1, 6, 9}, a, 0, 2));  // flipped back
  EXPECT_EQ(recv, before);
  // Past the output, past the element's width: nothing.
  EXPECT_FALSE(apply_test_flip({0, 1, 8, 0}, a, 0, 2));
  EXPECT_FALSE(apply_test_flip({0, 1, 0, 16}, a, 0, 2));
  EXPECT_EQ(recv, before);
  // allgather: the output is nranks blocks of count.
  CollectiveArgs g{Collective::AllGather, nullptr, recv.data(), 2, DataType::Float16, ReduceOp::Sum, 0};
  EXPECT_TRUE(apply_test_flip({0, 1, 7, 0}, g, 1, 4));
  EXPECT_EQ(recv[7], 0x3c01);
  EXPECT_FALSE(apply_test_flip({0, 1, 8, 0}, g, 1, 4));
  // reduce: only the root has an output.
  CollectiveArgs r{Collective::Reduce, nullptr, recv.data(), 8, DataType::Float16, ReduceOp::Sum, 1};
  EXPECT_FALSE(apply_test_flip({0, 1, 0, 0}, r, 0, 2));
  EXPECT_TRUE(apply_test_flip({0, 1, 0, 0}, r, 1, 2));
  EXPECT_EQ(recv[0], 0x3c01);
}

}  // namespace
}  // namespace smddp
