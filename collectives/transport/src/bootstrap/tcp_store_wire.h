// The TCP store's wire format, shared by its client (tcp_store.cc) and its
// server (tcp_store_server.cc). Vocabulary: a frame is a 9-byte head (magic,
// code, payload length, little-endian) followed by the payload. A request's
// code is an Op; a reply's code is a Status. Payloads are sequences of u32,
// i64 and strings (u32 length + bytes). The magic makes a stray service on
// MASTER_PORT an error instead of a hang; the length limits keep garbage
// from allocating memory.
//
// A connection starts with the handshake: the server sends Challenge (a
// fresh nonce), the client answers Hello with its proof of the shared
// secret (tcp_store_auth.h), and until that proof is checked the server
// accepts nothing but one Hello of at most kMaxHandshakePayload bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include "smddp/error.h"

namespace smddp::store {

inline constexpr uint32_t kMagic = 0x564b4d53;  // "SMKV"
inline constexpr size_t kHeadBytes = 9;
// 2: the handshake's MACs cover length-framed fields (common/auth_frame.h).
inline constexpr uint32_t kVersion = 2;
// Replies may be long (a Get of every rank's value); requests an
// authenticated client sends are at most kMaxRequest; before that, a
// client may send only a Hello this long.
inline constexpr uint32_t kMaxPayload = 1u << 30;
inline constexpr uint32_t kMaxRequest = 64u << 20;
inline constexpr uint32_t kMaxHandshakePayload = 4096;
inline constexpr size_t kNonceBytes = 32;

enum class Op : uint8_t {
  // u32 rank, u32 world_size, str host, str client nonce, str proof (empty
  // without a secret) -> Ok(str server proof) | Invalid | Denied
  Hello = 1,
  Set = 2,    // str key, str value -> Ok
  Get = 3,    // u32 timeout_ms, u32 n, n x str key -> Ok(n x str value) | Timeout(u32 n, missing keys)
  Add = 4,    // str key, i64 delta -> Ok(i64 new value)
};

// Error and Invalid carry a message: Invalid when the job is misconfigured
// (ranks disagree on WORLD_SIZE, a RANK twice), Error for run-time failures.
// Challenge is the server's first frame (u32 version, u32 flags, str
// nonce); Denied (str message) answers a Hello whose proof is wrong, and the
// server then closes the connection.
enum class Status : uint8_t { Ok = 0, Error = 1, Timeout = 2, Invalid = 3, Challenge = 4, Denied = 5 };
inline constexpr uint32_t kFlagSecretRequired = 1;

// Thrown by Reader on a truncated or malformed payload: a TransportError, so
// that a garbled reply ends a rank like a broken connection (fuzz/tcp_store_client.cc).
class WireError : public TransportError {
 public:
  using TransportError::TransportError;
};

class Writer {
 public:
  Writer& u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) buf_.push_back(static_cast<char>(v >> (8 * i)));
    return *this;
  }
  Writer& i64(int64_t v) {
    auto u = static_cast<uint64_t>(v);
    for (int i = 0; i < 8; ++i) buf_.push_back(static_cast<char>(u >> (8 * i)));
    return *this;
  }
  Writer& str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    buf_.append(s);
    return *this;
  }
  // The payload wrapped in a frame with this code.
  std::string frame(uint8_t code) const {
    Writer head;
    head.u32(kMagic);
    head.buf_.push_back(static_cast<char>(code));
    head.u32(static_cast<uint32_t>(buf_.size()));
    return head.buf_ + buf_;
  }

 private:
  std::string buf_;
};

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  uint32_t u32() {
    need(4);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(data_[pos_ + i])) << (8 * i);
    pos_ += 4;
    return v;
  }
  int64_t i64() {
    need(8);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(data_[pos_ + i])) << (8 * i);
    pos_ += 8;
    return static_cast<int64_t>(v);
  }
  // The number of strings that follow: each takes at least 4 bytes, so a
  // count the rest of the payload cannot hold is malformed (and would
  // otherwise size a vector from garbage).
  uint32_t count() {
    const uint32_t n = u32();
    if (n > (data_.size() - pos_) / 4) throw WireError("malformed TCP store message (count " + std::to_string(n) + ")");
    return n;
  }
  std::string str() {
    uint32_t n = u32();
    need(n);
    std::string s(data_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  bool done() const { return pos_ == data_.size(); }
  // Throws unless every byte was read: trailing bytes are malformed too.
  void finish() const {
    if (!done()) throw WireError("trailing bytes in TCP store message");
  }

 private:
  void need(size_t n) const {
    if (data_.size() - pos_ < n) throw WireError("truncated TCP store message");
  }
  std::string_view data_;
  size_t pos_ = 0;
};

struct Head {
  uint8_t code = 0;
  uint32_t length = 0;
};

// Parses a frame head; false when the magic or the length is wrong.
inline bool parse_head(const char* p, Head* head) {
  Reader r(std::string_view(p, kHeadBytes));
  if (r.u32() != kMagic) return false;
  head->code = static_cast<uint8_t>(p[4]);
  Reader len(std::string_view(p + 5, 4));
  head->length = len.u32();
  return head->length <= kMaxPayload;
}

// The first frame of `buffer` (bytes received so far): Incomplete while it
// may still arrive whole, Bad when its head is not ours or its payload is
// longer than `limit`, else Ready with `payload` viewing its bytes and
// `*used` the frame's length. The server's only entry for raw bytes.
enum class FrameState { Incomplete, Ready, Bad };
inline FrameState next_frame(std::string_view buffer, uint32_t limit, Head* head, std::string_view* payload,
                             size_t* used) {
  if (buffer.size() < 4) {
    // A wrong magic is refused on its first byte, not after 9.
    for (size_t i = 0; i < buffer.size(); ++i) {
      if (static_cast<unsigned char>(buffer[i]) != ((kMagic >> (8 * i)) & 0xff)) return FrameState::Bad;
    }
    return FrameState::Incomplete;
  }
  if (buffer.size() < kHeadBytes) {
    return Reader(buffer.substr(0, 4)).u32() == kMagic ? FrameState::Incomplete : FrameState::Bad;
  }
  if (!parse_head(buffer.data(), head) || head->length > limit) return FrameState::Bad;
  if (buffer.size() - kHeadBytes < head->length) return FrameState::Incomplete;
  *payload = buffer.substr(kHeadBytes, head->length);
  *used = kHeadBytes + head->length;
  return FrameState::Ready;
}

struct Challenge {
  uint32_t version = kVersion;
  uint32_t flags = 0;
  std::string nonce;
};

inline std::string encode(const Challenge& c) {
  return Writer().u32(c.version).u32(c.flags).str(c.nonce).frame(static_cast<uint8_t>(Status::Challenge));
}

// A Challenge payload; WireError when malformed or of another version.
inline Challenge decode_challenge(std::string_view payload) {
  Reader r(payload);
  Challenge c;
  c.version = r.u32();
  if (c.version != kVersion) {
    throw WireError("TCP store protocol version " + std::to_string(c.version) + ", this build speaks " +
                    std::to_string(kVersion) + " (different builds of smddp in one job?)");
  }
  c.flags = r.u32();
  c.nonce = r.str();
  r.finish();
  if (c.nonce.size() != kNonceBytes) throw WireError("TCP store challenge with a nonce of the wrong size");
  return c;
}

struct Hello {
  uint32_t rank = 0;
  uint32_t world_size = 0;
  std::string host;
  std::string nonce;  // the client's
  std::string proof;  // empty without a secret
};

inline Writer encode(const Hello& h) {
  Writer w;
  w.u32(h.rank).u32(h.world_size).str(h.host).str(h.nonce).str(h.proof);
  return w;
}

// A Hello payload; WireError when malformed.
inline Hello decode_hello(std::string_view payload) {
  Reader r(payload);
  Hello h;
  h.rank = r.u32();
  h.world_size = r.u32();
  h.host = r.str();
  h.nonce = r.str();
  h.proof = r.str();
  r.finish();
  if (h.nonce.size() != kNonceBytes) throw WireError("TCP store Hello with a nonce of the wrong size");
  return h;
}

}  // namespace smddp::store
