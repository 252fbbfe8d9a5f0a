// Length-framed authenticated messages: every MAC the project sends (the
// TCP store's and the socket transport's challenge-response proofs, the
// hang report's records) is made here. The MAC covers a label naming the
// purpose, then each field, every one as a big-endian u32 length and its
// bytes:
//   HMAC-SHA256(key, len(label) label | len(f1) f1 | len(f2) f2 | ...)
// So no two different messages are the same MAC input: moving bytes from
// one field to the next, or using a proof of one purpose for another,
// changes what is signed. verify() compares in constant time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace smddp::crypto {

class AuthFrame {
 public:
  // `label` says what the MAC is for ("smddp-store client"); each purpose
  // has its own, so a MAC made for one is refused as another.
  explicit AuthFrame(std::string_view label);

  // Fields longer than a u32 can count are a programming error (length_error).
  AuthFrame& field(std::string_view bytes);
  // A number, as a field of 4 big-endian bytes.
  AuthFrame& u32(uint32_t value);

  // HMAC-SHA256 of the framed label and fields, kMacBytes raw bytes.
  std::string mac(std::string_view key) const;
  // `mac` is this frame's MAC under `key` (constant time, any length).
  bool verify(std::string_view key, std::string_view mac) const;

  // What the MAC covers, for tests.
  const std::string& framed() const { return framed_; }

 private:
  std::string framed_;
};

}  // namespace smddp::crypto
