// The transport contract: post a send or a receive of (peer, buffer, bytes,
// tag), then drive progress until the request is done. Messages between one
// pair of ranks are matched in posting order; the tag is a consistency check.
// Requests are owned by the caller and must stay alive until done.
// Every transport (shm, MPI, libfabric) implements exactly this.
#pragma once

#include <cstddef>
#include <string_view>

namespace smddp {

struct Request {
  enum class Kind : unsigned char { Send, Recv };
  Kind kind = Kind::Send;
  int peer = -1;  // world rank
  int tag = 0;
  void* buf = nullptr;
  size_t bytes = 0;
  size_t offset = 0;  // bytes moved so far (transports that stream)
  bool done = false;
  void* impl = nullptr;  // transport-private handle
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string_view name() const = 0;
  virtual void post(Request& request) = 0;
  // Advances posted requests; sets done on those that completed.
  virtual void progress() = 0;
  // Throws PeerLostError when the transport knows the peer is gone.
  virtual void check_peer(int peer) = 0;
};

}  // namespace smddp
