// The socket transport (socket_transport.h). Vocabulary: a frame is a
// 16-byte head (tag, byte count) followed by the message's bytes; each peer
// has a FIFO of posted sends and one of posted receives, and only the front
// of each moves. Bytes are read only into a posted receive: until one is
// posted the data waits in the kernel, whose flow control stops the sender,
// so no message is ever buffered twice.
#include "transports/socket_transport.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <deque>
#include <string>
#include <vector>

#include "core/check.h"
#include "smddp/common/socket_io.h"
#include "smddp/error.h"
#include "transports/socket_handshake.h"

namespace smddp {
namespace {

using net::Clock;

constexpr size_t kMaxPiece = size_t{1} << 30;

struct FrameHead {
  int32_t tag;
  uint32_t reserved;
  uint64_t bytes;
};
static_assert(sizeof(FrameHead) == 16);

// What each rank publishes at setup.
struct PeerRecord {
  char address[64];
  char host[64];
  int32_t port;
};

struct Peer {
  net::Fd fd;
  std::string host;
  std::deque<Request*> sends, recvs;
  FrameHead out{};
  size_t out_done = 0;  // head bytes of the front send already sent
  FrameHead in{};
  size_t in_done = 0;  // head bytes of the front receive already read
  std::string lost;    // why the peer is gone; empty while it is healthy
  bool active = false;
};

class SocketTransport final : public Transport {
 public:
  SocketTransport(Bootstrap& bootstrap, const SocketTransportConfig& config)
      : me_(bootstrap.rank()), peers_(static_cast<size_t>(bootstrap.size())) {
    secret_ = config.secret;
    const auto deadline = net::deadline_in(config.setup_timeout_seconds);
    net::Fd listener = listen(config.listen_address);
    PeerRecord mine{};
    std::snprintf(mine.address, sizeof mine.address, "%s", config.listen_address.c_str());
    gethostname(mine.host, sizeof mine.host - 1);
    mine.port = net::local_port(listener.get());
    std::vector<PeerRecord> all(peers_.size());
    bootstrap.allgather(&mine, all.data(), sizeof(PeerRecord));
    for (size_t p = 0; p < peers_.size(); ++p) peers_[p].host = all[p].host;
    for (int p = 0; p < me_; ++p) connect_to(p, all[static_cast<size_t>(p)], deadline, config.setup_timeout_seconds);
    std::vector<net::Fd> from_higher(peers_.size());
    socket_setup::accept_from_higher(listener.get(), me_, secret_, from_higher, deadline, config.setup_timeout_seconds);
    for (size_t p = static_cast<size_t>(me_) + 1; p < peers_.size(); ++p) peers_[p].fd = std::move(from_higher[p]);
    for (auto& peer : peers_) {
      if (!peer.fd) continue;
      net::set_nonblocking(peer.fd.get(), true);
      net::set_nodelay(peer.fd.get());
    }
  }

  std::string_view name() const override { return "socket"; }

  void post(Request& r) override {
    r.offset = 0;
    r.done = r.bytes == 0;  // empty messages never touch the connection
    if (r.done) return;
    Peer& peer = peers_.at(static_cast<size_t>(r.peer));
    SMDDP_CHECK(peer.fd);  // every other rank was connected at setup
    (r.kind == Request::Kind::Send ? peer.sends : peer.recvs).push_back(&r);
    if (!peer.active) {
      peer.active = true;
      active_.push_back(r.peer);
    }
  }

  void progress() override {
    moved_ = false;
    for (size_t i = 0; i < active_.size();) {
      Peer& peer = peers_[static_cast<size_t>(active_[i])];
      if (peer.lost.empty()) {
        pump_sends(peer);
        pump_recvs(active_[i], peer);
      }
      if (peer.sends.empty() && peer.recvs.empty()) {
        peer.active = false;
        active_[i] = active_.back();
        active_.pop_back();
      } else {
        ++i;
      }
    }
    // A poll that moved nothing gives the core away once, as Open MPI's TCP
    // progress does when ranks share cores: the peer we wait for may need
    // this core to send at all (4 ranks on 2 cores: 50 us instead of 5 ms
    // per small allreduce). Without other runnable threads it costs ~1 us.
    if (!active_.empty() && !moved_) sched_yield();
  }

  void check_peer(int p) override {
    Peer& peer = peers_.at(static_cast<size_t>(p));
    if (peer.lost.empty() && peer.fd) {
      char c;
      ssize_t n = ::recv(peer.fd.get(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno == ECONNRESET)) mark_lost(p, peer, "closed its connection");
    }
    if (!peer.lost.empty()) throw PeerLostError(peer.lost);
  }

 private:
  static net::Fd listen(const std::string& address) {
    std::string error = "no address";
    for (const auto& ep : net::resolve(address, 0, &error)) {
      int err = 0;
      net::Fd fd = net::listen_on(ep, &err);
      if (fd) return fd;
      error = net::errno_text(err);
    }
    throw TransportError("socket transport: cannot listen on " + address + ": " + error +
                         " (set SMDDP_SOCKET_ADDRESS to an address of this host)");
  }

  void connect_to(int p, const PeerRecord& rec, Clock::time_point deadline, double timeout) {
    std::string error = "no address";
    const std::string peer_name = "rank " + std::to_string(p) + " on " + peers_[static_cast<size_t>(p)].host +
                                  " (" + rec.address + ":" + std::to_string(rec.port) + ")";
    do {
      for (const auto& ep : net::resolve(rec.address, rec.port, &error)) {
        int err = 0;
        net::Fd fd = net::connect_once(ep, std::max(1, net::ms_left(deadline, 2000)), &err);
        if (!fd) {
          error = net::errno_text(err);
          continue;
        }
        if (!socket_setup::say_hello(fd.get(), me_, p, static_cast<int>(peers_.size()), secret_, peer_name, deadline)) {
          error = "the connection broke during setup";
          continue;
        }
        peers_[static_cast<size_t>(p)].fd = std::move(fd);
        return;
      }
      usleep(50 * 1000);
    } while (Clock::now() < deadline);
    throw TransportError("socket transport: rank " + std::to_string(me_) + " cannot connect to " + peer_name +
                         " within " + socket_setup::seconds_text(timeout) + ": " + error);
  }

  void pump_sends(Peer& peer) {
    while (!peer.sends.empty()) {
      Request& r = *peer.sends.front();
      if (peer.out_done == 0 && r.offset == 0) peer.out = FrameHead{r.tag, 0, r.bytes};
      iovec iov[2];
      int n = 0;
      if (peer.out_done < sizeof(FrameHead)) {
        iov[n++] = {reinterpret_cast<char*>(&peer.out) + peer.out_done, sizeof(FrameHead) - peer.out_done};
      }
      if (r.offset < r.bytes) iov[n++] = {static_cast<char*>(r.buf) + r.offset, std::min(kMaxPiece, r.bytes - r.offset)};
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<size_t>(n);
      ssize_t k = ::sendmsg(peer.fd.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (k < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        mark_lost(r.peer, peer, errno == EPIPE || errno == ECONNRESET ? "closed its connection"
                                                                      : "cannot be sent to: " + net::errno_text(errno));
        return;
      }
      advance(peer.out_done, r.offset, static_cast<size_t>(k));
      if (peer.out_done < sizeof(FrameHead) || r.offset < r.bytes) return;  // the kernel took what it could
      r.done = true;
      peer.sends.pop_front();
      peer.out_done = 0;
    }
  }

  void pump_recvs(int p, Peer& peer) {
    while (!peer.recvs.empty()) {
      Request& r = *peer.recvs.front();
      iovec iov[2];
      int n = 0;
      if (peer.in_done < sizeof(FrameHead)) {
        iov[n++] = {reinterpret_cast<char*>(&peer.in) + peer.in_done, sizeof(FrameHead) - peer.in_done};
      }
      if (r.offset < r.bytes) iov[n++] = {static_cast<char*>(r.buf) + r.offset, std::min(kMaxPiece, r.bytes - r.offset)};
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<size_t>(n);
      ssize_t k = ::recvmsg(peer.fd.get(), &msg, MSG_DONTWAIT);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (k <= 0) {
        mark_lost(p, peer, k == 0 || errno == ECONNRESET ? "closed its connection"
                                                         : "cannot be received from: " + net::errno_text(errno));
        return;
      }
      const bool had_head = peer.in_done == sizeof(FrameHead);
      advance(peer.in_done, r.offset, static_cast<size_t>(k));
      if (!had_head && peer.in_done == sizeof(FrameHead) &&
          (peer.in.tag != r.tag || peer.in.bytes != r.bytes)) {
        throw TransportError("socket transport: rank " + std::to_string(me_) + " expected a message of " +
                             std::to_string(r.bytes) + " bytes (tag " + std::to_string(r.tag) + ") from rank " +
                             std::to_string(p) + " on " + peer.host + " but got " + std::to_string(peer.in.bytes) +
                             " bytes (tag " + std::to_string(peer.in.tag) + ")");
      }
      if (peer.in_done < sizeof(FrameHead) || r.offset < r.bytes) return;
      r.done = true;
      peer.recvs.pop_front();
      peer.in_done = 0;
    }
  }

  // Splits `k` moved bytes between the frame head and the payload.
  void advance(size_t& head_done, size_t& offset, size_t k) {
    moved_ = true;
    size_t h = std::min(k, sizeof(FrameHead) - head_done);
    head_done += h;
    offset += k - h;
  }

  void mark_lost(int p, Peer& peer, const std::string& why) {
    if (peer.lost.empty()) peer.lost = "rank " + std::to_string(p) + " on " + peer.host + " " + why;
  }

  int me_;
  std::string secret_;  // SMDDP_STORE_SECRET; empty: hellos prove nothing
  std::vector<Peer> peers_;
  std::vector<int> active_;  // peers with posted requests
  bool moved_ = false;
};

}  // namespace

std::unique_ptr<Transport> make_socket_transport(Bootstrap& bootstrap, const SocketTransportConfig& config) {
  return std::make_unique<SocketTransport>(bootstrap, config);
}

}  // namespace smddp
