// auth_frame.h: each field framed as a big-endian u32 length and its bytes.
#include "smddp/common/auth_frame.h"

#include <cstdint>
#include <stdexcept>

#include "smddp/common/crypto.h"

namespace smddp::crypto {
namespace {

void put_be32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

}  // namespace

AuthFrame::AuthFrame(std::string_view label) { field(label); }

AuthFrame& AuthFrame::field(std::string_view bytes) {
  if (bytes.size() > UINT32_MAX) throw std::length_error("AuthFrame: a field longer than 4 GiB");
  put_be32(framed_, static_cast<uint32_t>(bytes.size()));
  framed_.append(bytes);
  return *this;
}

AuthFrame& AuthFrame::u32(uint32_t value) {
  std::string bytes;
  put_be32(bytes, value);
  return field(bytes);
}

std::string AuthFrame::mac(std::string_view key) const { return hmac_sha256(key, framed_); }

bool AuthFrame::verify(std::string_view key, std::string_view mac_given) const {
  return equal_constant_time(mac(key), mac_given);
}

}  // namespace smddp::crypto
