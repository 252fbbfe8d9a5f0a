// crypto.h over OpenSSL's libcrypto.
#include "smddp/common/crypto.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <climits>

#include "smddp/error.h"

namespace smddp::crypto {
namespace {

// OpenSSL's reason for the last failure on this thread, for the message.
std::string openssl_error() {
  const unsigned long code = ERR_get_error();
  if (code == 0) return "no reason given";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

}  // namespace

std::string hmac_sha256(std::string_view key, std::string_view message) {
  std::string out(kMacBytes, '\0');
  unsigned int len = 0;
  // HMAC() takes an int key length; our keys are at most a few KiB.
  if (key.size() > INT_MAX ||
      !HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
            reinterpret_cast<const unsigned char*>(message.data()), message.size(),
            reinterpret_cast<unsigned char*>(out.data()), &len) ||
      len != kMacBytes) {
    throw Error("HMAC-SHA256 failed: " + openssl_error());
  }
  return out;
}

void random_bytes(void* out, size_t n) {
  auto* p = static_cast<unsigned char*>(out);
  while (n > 0) {  // RAND_bytes takes an int count
    const int chunk = static_cast<int>(std::min<size_t>(n, INT_MAX));
    if (RAND_bytes(p, chunk) != 1) throw TransportError("no random bytes from OpenSSL: " + openssl_error());
    p += chunk;
    n -= static_cast<size_t>(chunk);
  }
}

std::string random_bytes(size_t n) {
  std::string out(n, '\0');
  random_bytes(out.data(), n);
  return out;
}

std::string random_hex(size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : random_bytes(n)) {
    hex += kDigits[b >> 4];
    hex += kDigits[b & 15];
  }
  return hex;
}

bool equal_constant_time(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace smddp::crypto
