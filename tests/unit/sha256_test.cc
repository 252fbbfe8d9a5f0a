// SHA-256 against FIPS 180-4's examples (and the NIST long-message vector),
// HMAC-SHA256 against RFC 4231, and the constant-time comparison.
#include "transports/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace smddp::crypto {
namespace {

std::string unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

std::string sha_hex(const std::string& m) { return hex(bytes(sha256(m))); }
std::string hmac_hex(const std::string& k, const std::string& m) { return hex(bytes(hmac_sha256(k, m))); }

TEST(Sha256, Fips180Examples) {
  EXPECT_EQ(sha_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PiecesEqualWhole) {
  // Padding crosses a block at 56..63 bytes: every split of those lengths.
  for (size_t len : {55, 56, 63, 64, 65, 119, 120}) {
    const std::string m(len, 'x');
    for (size_t cut = 0; cut <= len; cut += 7) {
      Sha256 s;
      s.update(std::string_view(m).substr(0, cut));
      s.update(std::string_view(m).substr(cut));
      EXPECT_EQ(hex(bytes(s.finish())), sha_hex(m)) << len << " cut " << cut;
    }
  }
}

TEST(HmacSha256, Rfc4231) {
  // Test cases 1-4, 6 and 7 (case 5 is a truncated output).
  EXPECT_EQ(hmac_hex(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hmac_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hmac_hex(std::string(20, '\xaa'), std::string(50, '\xdd')),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  EXPECT_EQ(hmac_hex(unhex("0102030405060708090a0b0c0d0e0f10111213141516171819"), std::string(50, '\xcd')),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  EXPECT_EQ(hmac_hex(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(hmac_hex(std::string(131, '\xaa'),
                     "This is a test using a larger than block-size key and a larger than block-size data. The key "
                     "needs to be hashed before being used by the HMAC algorithm."),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST(ConstantTime, EqualOnlyWhenEveryByteIs) {
  const std::string a(32, 'a');
  EXPECT_TRUE(equal_in_constant_time(a, a));
  EXPECT_TRUE(equal_in_constant_time("", ""));
  for (size_t i : {size_t{0}, size_t{15}, size_t{31}}) {
    std::string b = a;
    b[i] ^= 1;
    EXPECT_FALSE(equal_in_constant_time(a, b)) << i;
  }
  EXPECT_FALSE(equal_in_constant_time(a, a.substr(1)));
  EXPECT_FALSE(equal_in_constant_time(a, ""));
}

}  // namespace
}  // namespace smddp::crypto
