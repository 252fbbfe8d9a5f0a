// The project's cryptography, all from OpenSSL's libcrypto: HMAC-SHA256,
// random bytes from the system's generator, and a comparison whose time
// does not depend on where two byte strings differ. Nothing here is our
// own cipher or hash. Authenticated messages go through auth_frame.h,
// which frames every field before the MAC.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace smddp::crypto {

inline constexpr size_t kMacBytes = 32;  // an HMAC-SHA256, raw

// HMAC-SHA256(key, message) as kMacBytes raw bytes (RFC 2104, FIPS 180-4).
std::string hmac_sha256(std::string_view key, std::string_view message);

// `n` bytes from OpenSSL's generator (seeded by the kernel); TransportError
// when it cannot give them.
std::string random_bytes(size_t n);
void random_bytes(void* out, size_t n);

// `n` random bytes as 2n lowercase hex digits: unguessable names and secrets
// that must be text.
std::string random_hex(size_t n);

// True when `a` and `b` have the same length and bytes. For equal lengths
// the time does not depend on the contents (CRYPTO_memcmp), so a MAC is
// never checked with an early exit an attacker could time; the length
// itself is not secret.
bool equal_constant_time(std::string_view a, std::string_view b);

}  // namespace smddp::crypto
