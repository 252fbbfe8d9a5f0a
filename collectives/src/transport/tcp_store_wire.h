// The TCP store's wire format, shared by its client (tcp_store.cc) and its
// server (tcp_store_server.cc). Vocabulary: a frame is a 9-byte head (magic,
// code, payload length, little-endian) followed by the payload. A request's
// code is an Op; a reply's code is a Status. Payloads are sequences of u32,
// i64 and strings (u32 length + bytes). The magic makes a stray service on
// MASTER_PORT an error instead of a hang; the length limit keeps garbage
// from allocating gigabytes.
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
inline constexpr uint32_t kMaxPayload = 1u << 30;

enum class Op : uint8_t {
  Hello = 1,  // i32 rank, i32 world_size, str host -> Ok | Error
  Set = 2,    // str key, str value -> Ok
  Get = 3,    // u32 timeout_ms, u32 n, n x str key -> Ok(n x str value) | Timeout(u32 n, missing keys)
  Add = 4,    // str key, i64 delta -> Ok(i64 new value)
};

// Error and Invalid carry a message: Invalid when the job is misconfigured
// (ranks disagree on WORLD_SIZE, a RANK twice), Error for run-time failures.
enum class Status : uint8_t { Ok = 0, Error = 1, Timeout = 2, Invalid = 3 };

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

}  // namespace smddp::store
