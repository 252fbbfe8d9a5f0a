// Flagging slow links: absolute floors and slower-than-the-median.
#include <gtest/gtest.h>

#include "fabric/pingpong.h"

namespace smddp::diag {
namespace {

LinkMatrix matrix(std::vector<LinkResult> links) {
  LinkMatrix m;
  m.nranks = 4;
  m.hosts = {"a", "b", "c", "d"};
  m.links = std::move(links);
  return m;
}

TEST(Links, SlowerThanMedianByAFactor) {
  auto m = matrix({{0, 1, 10, 12}, {0, 2, 10, 12}, {0, 3, 10, 11}, {1, 2, 10, 12}, {1, 3, 10, 4}, {2, 3, 10, 12}});
  auto flagged = flag_links(m, LinkThresholds{0, 0, 2.0});
  ASSERT_EQ(flagged.size(), 1u);
  EXPECT_EQ(flagged[0].a, 1);
  EXPECT_EQ(flagged[0].b, 3);
  EXPECT_EQ(flagged[0].reason, "4.000 GB/s, over 2x below the median 12.000 GB/s");
  EXPECT_TRUE(flag_links(m, LinkThresholds{0, 0, 0}).empty());
}

TEST(Links, AbsoluteThresholds) {
  auto m = matrix({{0, 1, 5, 9}, {2, 3, 50, 12}});
  auto flagged = flag_links(m, LinkThresholds{10, 20, 0});
  ASSERT_EQ(flagged.size(), 2u);
  EXPECT_EQ(flagged[0].reason, "9.000 GB/s < minimum 10.000 GB/s");
  EXPECT_EQ(flagged[1].reason, "latency 50.0 us > maximum 20.0 us");
}

TEST(Links, TextMatrixMarksFlaggedCells) {
  auto m = matrix({{0, 1, 5, 9}});
  m.nranks = 2;
  std::string text = link_matrix_text(m, {{0, 1, "slow"}});
  EXPECT_NE(text.find("9.000*"), std::string::npos) << text;
  EXPECT_NE(text.find("r0 (a) <-> r1 (b): slow"), std::string::npos) << text;
}

}  // namespace
}  // namespace smddp::diag
