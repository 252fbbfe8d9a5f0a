// The hang report's message (hang_report_channel.h's hang_wire): what a
// host seals rank 0 opens; a moved host/records boundary, a replay under
// another nonce, another secret, a flipped bit and bad lengths are refused.
#include <gtest/gtest.h>

#include <string>

#include "supervision/hang_report_channel.h"

namespace smddp::bench::hang_wire {
namespace {

const std::string kSecret(32, 's'), kNonce(32, 'n');

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

TEST(HangWire, OpensWhatWasSealed) {
  const std::string m = seal(kSecret, kNonce, "host-a", R"({"ranks":[]})");
  ASSERT_EQ(body_bytes(m), m.size() - kHeadBytes);
  std::string host, records;
  ASSERT_TRUE(open(kSecret, kNonce, m, host, records));
  EXPECT_EQ(host, "host-a");
  EXPECT_EQ(records, R"({"ranks":[]})");
  ASSERT_TRUE(open(kSecret, kNonce, seal(kSecret, kNonce, "h", ""), host, records));
  EXPECT_EQ(host, "h");
  EXPECT_EQ(records, "");
}

TEST(HangWire, RefusesAMovedBoundary) {
  // Host "host-a", records "b{...}": the same bytes split one later would
  // read as host "host-ab". Only the head changes; the MAC stays.
  const std::string m = seal(kSecret, kNonce, "host-a", "b{}");
  std::string moved = be32(7) + be32(2) + m.substr(kHeadBytes);
  std::string host, records;
  ASSERT_EQ(body_bytes(moved), m.size() - kHeadBytes);
  EXPECT_FALSE(open(kSecret, kNonce, moved, host, records));
  moved = be32(5) + be32(4) + m.substr(kHeadBytes);
  EXPECT_FALSE(open(kSecret, kNonce, moved, host, records));
  EXPECT_TRUE(host.empty() && records.empty());
}

TEST(HangWire, RefusesTampering) {
  const std::string m = seal(kSecret, kNonce, "host-a", "records");
  std::string host, records;
  EXPECT_FALSE(open(kSecret, std::string(32, 'N'), m, host, records));  // a replay on another connection
  EXPECT_FALSE(open(std::string(32, 'S'), kNonce, m, host, records));
  for (size_t i = kHeadBytes; i < m.size(); ++i) {
    std::string flipped = m;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x10);
    EXPECT_FALSE(open(kSecret, kNonce, flipped, host, records)) << i;
  }
  EXPECT_FALSE(open(kSecret, kNonce, m.substr(0, m.size() - 1), host, records));
  EXPECT_FALSE(open(kSecret, kNonce, m + "x", host, records));
  EXPECT_FALSE(open(kSecret, kNonce, "", host, records));
  EXPECT_TRUE(host.empty() && records.empty());
}

TEST(HangWire, LengthsWithinTheLimits) {
  EXPECT_EQ(body_bytes(be32(0) + be32(1)), 0u);  // no host
  EXPECT_EQ(body_bytes(be32(kMaxHost + 1) + be32(1)), 0u);
  EXPECT_EQ(body_bytes(be32(1) + be32(kMaxRecords + 1)), 0u);
  EXPECT_EQ(body_bytes(be32(1)), 0u);  // short head
  EXPECT_EQ(body_bytes(be32(kMaxHost) + be32(kMaxRecords)), size_t{kMaxHost} + kMaxRecords + 32);
  EXPECT_EQ(seal(kSecret, kNonce, "", "r"), "");
  EXPECT_EQ(seal(kSecret, kNonce, std::string(kMaxHost + 1, 'h'), "r"), "");
  EXPECT_EQ(seal(kSecret, kNonce, "h", std::string(kMaxRecords + 1, 'r')), "");
}

}  // namespace
}  // namespace smddp::bench::hang_wire
