// smddp-bench -B (bench/src/sweep/bitwise.h): the bits of an element, the
// positions that differ, the one line a difference prints, the element
// comparison, the digest compared across ranks, and which collectives must
// agree across ranks; and find_wrong (data.h) naming the element and bits.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "sweep/bitwise.h"
#include "sweep/data.h"

namespace smddp::bench {
namespace {

TEST(Bitwise, HexBitsAreTheElementMostSignificantByteFirst) {
  EXPECT_EQ(hex_bits(0x3f800000, 4), "0x3f800000");
  EXPECT_EQ(hex_bits(0x7, 1), "0x07");
  EXPECT_EQ(hex_bits(0xabcd, 2), "0xabcd");
  EXPECT_EQ(hex_bits(0x0123456789abcdefULL, 8), "0x0123456789abcdef");
  EXPECT_EQ(hex_bits(0xffff, 1), "0xff");  // only the element's bytes
}

TEST(Bitwise, ElementBitsReadLittleEndian) {
  const unsigned char bytes[] = {0x00, 0x00, 0x80, 0x3f, 0x01, 0x02, 0x03, 0x04};
  EXPECT_EQ(element_bits(bytes, 0, 4), 0x3f800000u);
  EXPECT_EQ(element_bits(bytes, 1, 4), 0x04030201u);
  EXPECT_EQ(element_bits(bytes, 3, 2), 0x0403u);
  EXPECT_EQ(element_bits(bytes, 0, 8), 0x040302013f800000ULL);
  float one = 1.0f;
  EXPECT_EQ(element_bits(&one, 0, 4), 0x3f800000u);  // this host is little-endian, as the docs say
}

TEST(Bitwise, DifferingBitsAscending) {
  EXPECT_EQ(differing_bits(0, 0), std::vector<int>{});
  EXPECT_EQ(differing_bits(0x3f800000, 0x3f800008), std::vector<int>{3});
  EXPECT_EQ(differing_bits(0x1, 0x8000000000000000ULL), (std::vector<int>{0, 63}));
  EXPECT_EQ(differing_bits(0xff, 0x0f), (std::vector<int>{4, 5, 6, 7}));
}

TEST(Bitwise, OneLinePerElementDifference) {
  BitDifference d;
  d.against = BitDifference::Against::FirstRepeat;
  d.rank = 3;
  d.host = "node-7";
  d.repeat = 2;
  d.element = 5;
  d.bytes = 4;
  d.expected = 0x40400000;
  d.received = 0x40400008;
  EXPECT_EQ(format_difference(d, 3),
            "rank 3 on node-7, repeat 2 of 3, element 5: expected 0x40400000 (repeat 1), received 0x40400008, "
            "bit 3 differs");
  d.against = BitDifference::Against::Expected;
  d.repeat = 1;
  d.bytes = 2;
  d.expected = 0x3c00;
  d.received = 0xbc01;
  EXPECT_EQ(format_difference(d, 4),
            "rank 3 on node-7, repeat 1 of 4, element 5: expected 0x3c00 (expected value), received 0xbc01, "
            "bits 0, 15 differ");
}

TEST(Bitwise, OneLinePerRankDifference) {
  BitDifference d;
  d.against = BitDifference::Against::Ranks;
  d.rank = 1;
  d.host = "a";
  d.repeat = 3;
  d.expected = 0x1122334455667788ULL;
  d.received = 0x0102030405060708ULL;
  d.agreed_rank = 0;
  EXPECT_EQ(format_difference(d, 3),
            "rank 1 on a, repeat 3 of 3: output differs from rank 0's, which the group agrees on (digest "
            "0x0102030405060708 against 0x1122334455667788)");
}

TEST(Bitwise, CompareElementsNamesEachDifferenceUpToTheBound) {
  std::vector<double> want(10000, 1.5), got = want;
  unsigned char* g = reinterpret_cast<unsigned char*>(got.data());
  for (size_t i : {7u, 4100u, 9999u}) g[i * 8 + 7] ^= 0x40;  // bit 62 of three elements
  std::vector<ElementMismatch> first;
  EXPECT_EQ(compare_elements(want.data(), got.data(), want.size(), 8, &first, 2), 3u);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].element, 7u);
  EXPECT_EQ(first[1].element, 4100u);
  EXPECT_EQ(differing_bits(first[0].expected, first[0].received), std::vector<int>{62});
  EXPECT_EQ(compare_elements(want.data(), want.data(), want.size(), 8, nullptr, 0), 0u);
}

TEST(Bitwise, DigestMovesWithAnyBit) {
  std::vector<unsigned char> buf(1027);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(i * 7);
  const uint64_t base = output_digest(buf.data(), buf.size());
  EXPECT_EQ(base, output_digest(buf.data(), buf.size()));
  for (size_t byte : {0u, 8u, 511u, 1024u, 1026u}) {  // words and the tail
    for (int bit = 0; bit < 8; ++bit) {
      buf[byte] ^= static_cast<unsigned char>(1 << bit);
      EXPECT_NE(output_digest(buf.data(), buf.size()), base) << byte << ":" << bit;
      buf[byte] ^= static_cast<unsigned char>(1 << bit);
    }
  }
  // Two words swapped, or one byte fewer, is another output.
  std::vector<unsigned char> swapped = buf;
  std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 8);
  EXPECT_NE(output_digest(swapped.data(), swapped.size()), base);
  EXPECT_NE(output_digest(buf.data(), buf.size() - 1), base);
}

TEST(Bitwise, RankAgreementPerCollective) {
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::Broadcast}) {
    EXPECT_EQ(rank_agreement(c), RankAgreement::All) << to_string(c);
  }
  for (Collective c : {Collective::ReduceScatter, Collective::Reduce, Collective::AllToAll, Collective::Gather,
                       Collective::Scatter, Collective::SendRecv, Collective::AllToAllV, Collective::Barrier}) {
    EXPECT_EQ(rank_agreement(c), RankAgreement::None) << to_string(c);
  }
}

// find_wrong: the reference's own data, one bit flipped, is found at its
// index in the receive buffer (here block 1 of an allgather's).
TEST(Bitwise, FindWrongNamesTheElementAndBits) {
  const int n = 2;
  const size_t count = 100;
  DataSpec s{Collective::AllGather, DataType::Int32, ReduceOp::Sum, 42, n, 0};
  std::vector<int32_t> recv(n * count);
  for (int r = 0; r < n; ++r) fill_send(s, r, recv.data() + r * count, count);
  std::vector<ElementMismatch> first;
  EXPECT_EQ(find_wrong(s, 0, recv.data(), count, &first, 8), 0u);
  EXPECT_TRUE(first.empty());
  const uint32_t before = static_cast<uint32_t>(recv[count + 17]);
  recv[count + 17] ^= 1 << 20;
  EXPECT_EQ(find_wrong(s, 0, recv.data(), count, &first, 8), 1u);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].element, count + 17);
  EXPECT_EQ(first[0].expected, before);
  EXPECT_EQ(differing_bits(first[0].expected, first[0].received), std::vector<int>{20});
  EXPECT_EQ(count_wrong(s, 0, recv.data(), count), 1u);
}

}  // namespace
}  // namespace smddp::bench
