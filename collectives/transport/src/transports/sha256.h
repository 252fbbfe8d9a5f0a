// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), small and dependency-free:
// the TCP store's challenge-response needs nothing more, and the project
// links no crypto library. tests/unit/sha256_test.cc holds the FIPS and
// RFC 4231 vectors.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace smddp::crypto {

using Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  void update(std::string_view data);
  Digest finish();  // the object is spent afterwards

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t used_ = 0;
  uint64_t total_ = 0;
};

Digest sha256(std::string_view data);
Digest hmac_sha256(std::string_view key, std::string_view message);

// The digest as 32 raw bytes in a string, and as lowercase hex.
std::string bytes(const Digest& d);
std::string hex(std::string_view raw);

// Equal lengths and equal bytes, in time that depends on the length only:
// a proof is never compared with an early exit an attacker could time.
bool equal_in_constant_time(std::string_view a, std::string_view b);

}  // namespace smddp::crypto
