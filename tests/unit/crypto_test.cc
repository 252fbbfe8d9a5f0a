// common/'s cryptography: HMAC-SHA256 against RFC 4231's test cases, random
// bytes, the constant-time comparison, and AuthFrame's length framing (a
// known answer computed with Python's hmac module, and each kind of
// tampering refused).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "smddp/common/auth_frame.h"
#include "smddp/common/crypto.h"

namespace smddp::crypto {
namespace {

std::string unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

std::string hex(const std::string& raw) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : raw) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

std::string hmac_hex(const std::string& k, const std::string& m) { return hex(hmac_sha256(k, m)); }

TEST(HmacSha256, Rfc4231) {
  EXPECT_EQ(hmac_hex(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hmac_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hmac_hex(std::string(20, '\xaa'), std::string(50, '\xdd')),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  EXPECT_EQ(hmac_hex(unhex("0102030405060708090a0b0c0d0e0f10111213141516171819"), std::string(50, '\xcd')),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  // Case 5 publishes the first 128 bits only.
  EXPECT_EQ(hmac_hex(std::string(20, '\x0c'), "Test With Truncation").substr(0, 32),
            "a3b6167473100ee06e0c796c2955552b");
  EXPECT_EQ(hmac_hex(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(hmac_hex(std::string(131, '\xaa'),
                     "This is a test using a larger than block-size key and a larger than block-size data. The key "
                     "needs to be hashed before being used by the HMAC algorithm."),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
  EXPECT_EQ(hmac_sha256("k", "m").size(), kMacBytes);
}

TEST(RandomBytes, RightLengthAndNeverTheSame) {
  EXPECT_EQ(random_bytes(0), "");
  EXPECT_EQ(random_bytes(1000).size(), 1000u);
  // 200 draws of 16 bytes: a repeat would mean a stuck generator.
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) EXPECT_TRUE(seen.insert(random_bytes(16)).second) << i;
  const std::string h = random_hex(16);
  EXPECT_EQ(h.size(), 32u);
  EXPECT_EQ(h.find_first_not_of("0123456789abcdef"), std::string::npos) << h;
  EXPECT_NE(h, random_hex(16));
}

TEST(ConstantTime, EqualOnlyWhenEveryByteIs) {
  const std::string a(32, 'a');
  EXPECT_TRUE(equal_constant_time(a, a));
  EXPECT_TRUE(equal_constant_time(a, std::string(32, 'a')));
  EXPECT_TRUE(equal_constant_time("", ""));
  for (size_t i : {size_t{0}, size_t{15}, size_t{31}}) {
    std::string b = a;
    b[i] ^= 1;
    EXPECT_FALSE(equal_constant_time(a, b)) << i;
  }
  EXPECT_FALSE(equal_constant_time(a, a.substr(1)));
  EXPECT_FALSE(equal_constant_time(a, a + "a"));
  EXPECT_FALSE(equal_constant_time(a, ""));
}

TEST(AuthFrame, KnownAnswer) {
  // Every field, the label first, as a big-endian u32 length and its bytes;
  // the MAC from Python: hmac.new(b"key", framed, hashlib.sha256).
  AuthFrame f("smddp-test");
  f.field("ab").field("c").u32(7);
  EXPECT_EQ(hex(f.framed()), "0000000a736d6464702d7465737400000002616200000001630000000400000007");
  EXPECT_EQ(hex(f.mac("key")), "d61260f12c4b42015b5ba90683eb61c881e52f2e6d34d8edb1e702cfd54c5f3b");
  EXPECT_TRUE(f.verify("key", f.mac("key")));
}

TEST(AuthFrame, RefusesEveryChange) {
  const std::string key = "correct horse battery staple";
  const std::string mac = AuthFrame("purpose").field("ab").field("c").mac(key);
  ASSERT_TRUE(AuthFrame("purpose").field("ab").field("c").verify(key, mac));
  // The same bytes with the boundary moved: the lengths differ, so the MAC does.
  EXPECT_FALSE(AuthFrame("purpose").field("a").field("bc").verify(key, mac));
  EXPECT_FALSE(AuthFrame("purpose").field("abc").verify(key, mac));
  EXPECT_FALSE(AuthFrame("purpose").field("ab").field("c").field("").verify(key, mac));
  // The label's boundary with the first field.
  EXPECT_FALSE(AuthFrame("purposea").field("b").field("c").verify(key, mac));
  EXPECT_FALSE(AuthFrame("other purpose").field("ab").field("c").verify(key, mac));
  EXPECT_FALSE(AuthFrame("purpose").field("ab").field("c").verify("correct horse battery stapl", mac));
  EXPECT_FALSE(AuthFrame("purpose").field("ab").field("d").verify(key, mac));
  for (size_t bit = 0; bit < 8 * mac.size(); bit += 37) {
    std::string flipped = mac;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    EXPECT_FALSE(AuthFrame("purpose").field("ab").field("c").verify(key, flipped)) << bit;
  }
  EXPECT_FALSE(AuthFrame("purpose").field("ab").field("c").verify(key, mac.substr(0, 16)));
  EXPECT_FALSE(AuthFrame("purpose").field("ab").field("c").verify(key, ""));
  // Numbers are fields of four bytes, not their text.
  EXPECT_NE(AuthFrame("n").u32(1).framed(), AuthFrame("n").field("1").framed());
}

}  // namespace
}  // namespace smddp::crypto
