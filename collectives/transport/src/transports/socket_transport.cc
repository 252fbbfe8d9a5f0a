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
#include <chrono>
#include <memory>
#include <cerrno>
#include <cstdio>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "smddp/common/socket_io.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "transports/socket_handshake.h"

namespace smddp {
namespace {

using net::Clock;

constexpr size_t kMaxPiece = size_t{1} << 30;
constexpr std::string_view kPrefix = "socket transport: ";

struct FrameHead {
  int32_t tag;
  uint32_t reserved;
  uint64_t bytes;
};
static_assert(sizeof(FrameHead) == 16);

// What each rank publishes at setup: where it listens, or why it cannot.
struct PeerRecord {
  char address[64];
  char host[64];
  int32_t port;  // 0: no listener, `error` says why
  char error[124];
};
static_assert(sizeof(PeerRecord) == 256);

// Each rank's outcome of connecting its partners, for the vote.
struct Outcome {
  int32_t verdict;  // kOk, or what failed (a connection we dialled names the cause best)
  char text[252];
};
constexpr int32_t kOk = 0, kNotConnected = 1, kUnreachable = 2;

struct Peer {
  net::Fd fd;
  std::string host, address;
  int port = 0;
  std::deque<Request*> sends, recvs;
  FrameHead out{};
  size_t out_done = 0;  // head bytes of the front send already sent
  FrameHead in{};
  size_t in_done = 0;  // head bytes of the front receive already read
  std::string lost;    // why the peer is gone; empty while it is healthy
  bool active = false;
  // Wanted but not connected yet: we dial it (we are the higher rank) or
  // wait for its hello.
  bool connecting = false;
  std::unique_ptr<socket_setup::Dialer> dialer;
  Clock::time_point wanted_since{}, dial_deadline{};
};

void copy_text(char* dst, size_t cap, const std::string& s) { std::snprintf(dst, cap, "%s", s.c_str()); }

class SocketTransport final : public Transport {
 public:
  SocketTransport(Bootstrap& bootstrap, const SocketTransportConfig& config)
      : me_(bootstrap.rank()),
        secret_(config.secret),
        connect_timeout_(config.connect_timeout_seconds),
        peers_(static_cast<size_t>(bootstrap.size())),
        acceptor_(me_, bootstrap.size(), secret_, [this](int p) { return !peers_[static_cast<size_t>(p)].fd; }) {}

  // Listens and publishes where; "" when every rank listens, else the
  // failure (the same on every rank).
  std::string publish(Bootstrap& bootstrap, const std::string& address) {
    PeerRecord mine{};
    copy_text(mine.address, sizeof mine.address, address);
    gethostname(mine.host, sizeof mine.host - 1);
    try {
      listener_ = listen(address);
      mine.port = net::local_port(listener_.get());
    } catch (const TransportError& e) {
      copy_text(mine.error, sizeof mine.error, e.what());
    }
    std::vector<PeerRecord> all(peers_.size());
    bootstrap.allgather(&mine, all.data(), sizeof(PeerRecord));
    for (size_t p = 0; p < peers_.size(); ++p) {
      peers_[p].host = all[p].host;
      peers_[p].address = all[p].address;
      peers_[p].port = all[p].port;
    }
    for (size_t p = 0; p < peers_.size(); ++p) {
      if (all[p].port == 0) return "socket transport: rank " + std::to_string(p) + " on " + all[p].host + ": " + all[p].error;
    }
    return "";
  }

  // Connects `partners` within the deadline, then votes; "" when every
  // rank connected all of its partners, else the failure (the same on
  // every rank).
  std::string connect_partners(Bootstrap& bootstrap, const std::vector<int>& partners, double timeout) {
    const auto deadline = net::deadline_in(timeout);
    Outcome mine{kOk, {}};
    setting_up_ = true;
    try {
      for (int p : partners) want(p, deadline);
      for (;;) {
        advance_connections(10);
        const bool all = std::all_of(partners.begin(), partners.end(),
                                     [&](int p) { return bool(peers_[static_cast<size_t>(p)].fd); });
        if (all || Clock::now() >= deadline) break;
      }
      for (int p : partners) {
        const Peer& peer = peers_[static_cast<size_t>(p)];
        if (peer.fd) continue;
        if (peer.dialer) {
          mine.verdict = kUnreachable;
          copy_text(mine.text, sizeof mine.text, "rank " + std::to_string(me_) + " on " + peers_[me()].host +
                                                     " cannot reach " + peer.dialer->peer_name() + " within " +
                                                     socket_setup::seconds_text(timeout) + ": " +
                                                     (peer.dialer->connected() ? "no answer to its hello"
                                                                               : peer.dialer->error()));
          break;
        }
        mine.verdict = kNotConnected;
        copy_text(mine.text, sizeof mine.text, "rank " + std::to_string(me_) + " on " + peers_[me()].host +
                                                   " waited " + socket_setup::seconds_text(timeout) + " for rank " +
                                                   std::to_string(p) + " on " + peer.host + " to connect");
      }
    } catch (const TransportError& e) {  // a wrong proof of the secret
      mine.verdict = kUnreachable;
      std::string_view what = e.what();
      if (what.starts_with(kPrefix)) what.remove_prefix(kPrefix.size());
      copy_text(mine.text, sizeof mine.text, std::string(what));
    }
    setting_up_ = false;
    std::vector<Outcome> all(peers_.size());
    bootstrap.allgather(&mine, all.data(), sizeof(Outcome));
    for (int32_t verdict : {kUnreachable, kNotConnected}) {
      for (const Outcome& o : all) {
        if (o.verdict == verdict) return std::string(kPrefix) + o.text;
      }
    }
    return "";
  }

  size_t connections() const {
    return static_cast<size_t>(std::count_if(peers_.begin(), peers_.end(), [](const Peer& p) { return bool(p.fd); }));
  }
  int port() const { return net::local_port(listener_.get()); }

  std::string_view name() const override { return "socket"; }

  void post(Request& r) override {
    r.offset = 0;
    r.done = r.bytes == 0;  // empty messages never touch the connection
    if (r.done) return;
    Peer& peer = peers_.at(static_cast<size_t>(r.peer));
    if (!peer.fd) want(r.peer, net::deadline_in(connect_timeout_));
    (r.kind == Request::Kind::Send ? peer.sends : peer.recvs).push_back(&r);
    if (!peer.active) {
      peer.active = true;
      active_.push_back(r.peer);
    }
  }

  void progress() override {
    moved_ = false;
    if (!connecting_.empty() || acceptor_.busy()) advance_connections(0);
    for (size_t i = 0; i < active_.size();) {
      Peer& peer = peers_[static_cast<size_t>(active_[i])];
      if (peer.lost.empty() && peer.fd) {
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
    // A peer that does not connect may just be late (the collective's
    // deadline judges that), unless connections failed the secret's proof.
    if (peer.connecting && !peer.dialer && acceptor_.failed_proofs() > 0 &&
        Clock::now() - peer.wanted_since >= std::chrono::duration<double>(connect_timeout_)) {
      const int n = acceptor_.failed_proofs();
      throw TransportError("socket transport: rank " + std::to_string(me_) + " waited " +
                           socket_setup::seconds_text(connect_timeout_) + " for rank " + std::to_string(p) + " on " +
                           peer.host + " to connect; " + std::to_string(n) + " connection" + (n == 1 ? "" : "s") +
                           " failed the SMDDP_STORE_SECRET handshake (a rank with another secret?)");
    }
  }

 private:
  size_t me() const { return static_cast<size_t>(me_); }

  static net::Fd listen(const std::string& address) {
    std::string error = "no address";
    for (const auto& ep : net::resolve(address, 0, &error)) {
      int err = 0;
      net::Fd fd = net::listen_on(ep, &err);
      if (fd) return fd;
      error = net::errno_text(err);
    }
    throw TransportError("cannot listen on " + address + ": " + error +
                         " (set SMDDP_SOCKET_ADDRESS to an address of this host)");
  }

  // A connection to `p` is wanted: the higher rank dials, the lower one
  // waits for the hello on its listener.
  void want(int p, Clock::time_point dial_deadline) {
    Peer& peer = peers_[static_cast<size_t>(p)];
    if (peer.fd || peer.connecting) return;
    peer.connecting = true;
    peer.wanted_since = Clock::now();
    peer.dial_deadline = dial_deadline;
    connecting_.push_back(p);
    if (p > me_) return;
    std::string error;
    peer.dialer = std::make_unique<socket_setup::Dialer>(
        me_, p, static_cast<int>(peers_.size()), secret_,
        "rank " + std::to_string(p) + " on " + peer.host + " (" + peer.address + ":" + std::to_string(peer.port) + ")",
        net::resolve(peer.address, peer.port, &error));
  }

  // Dials, accepts and reads hellos; waits at most `wait_ms` on the listener.
  void advance_connections(int wait_ms) {
    bool awaiting = false;
    for (size_t i = 0; i < connecting_.size();) {
      const int p = connecting_[i];
      Peer& peer = peers_[static_cast<size_t>(p)];
      if (peer.dialer && !peer.fd) {
        if (net::Fd fd = peer.dialer->step()) {
          established(p, std::move(fd));
        } else if (!setting_up_ && !peer.dialer->connected()) {
          dial_failed(p, peer);
        }
      }
      if (peer.fd || !peer.lost.empty()) {
        peer.connecting = false;
        peer.dialer.reset();
        connecting_[i] = connecting_.back();
        connecting_.pop_back();
        continue;
      }
      awaiting = awaiting || !peer.dialer;
      ++i;
    }
    if (awaiting || acceptor_.busy()) {
      acceptor_.poll(listener_.get(), wait_ms, [this](int p, net::Fd fd) { established(p, std::move(fd)); });
    } else if (wait_ms > 0) {
      usleep(static_cast<useconds_t>(wait_ms) * 1000);
    }
  }

  // After setup: a listener that refuses is gone (it was open at setup and
  // stays open for the transport's life); one that does not answer in time
  // is out of reach.
  void dial_failed(int p, Peer& peer) {
    const std::string& error = peer.dialer->error();
    if (error == net::errno_text(ECONNREFUSED)) {
      mark_lost(p, peer, "refuses connections at " + peer.address + ":" + std::to_string(peer.port) +
                             " (its process is gone, or a firewall rejects the port)");
    } else if (error == net::errno_text(EMFILE)) {  // waiting frees no file
      throw TransportError("socket transport: rank " + std::to_string(me_) + " cannot connect to " +
                           peer.dialer->peer_name() + ": " + error + " (raise `ulimit -n`, or use --transport mpi)");
    } else if (Clock::now() >= peer.dial_deadline) {
      throw TransportError("socket transport: rank " + std::to_string(me_) + " cannot connect to " +
                           peer.dialer->peer_name() + " within " + socket_setup::seconds_text(connect_timeout_) +
                           ": " + error);
    }
  }

  void established(int p, net::Fd fd) {
    net::set_nonblocking(fd.get(), true);
    net::set_nodelay(fd.get());
    peers_[static_cast<size_t>(p)].fd = std::move(fd);
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
  double connect_timeout_;
  std::vector<Peer> peers_;
  net::Fd listener_;
  socket_setup::Acceptor acceptor_;
  std::vector<int> active_;      // peers with posted requests
  std::vector<int> connecting_;  // peers wanted, not connected yet
  bool setting_up_ = false;      // connecting the partners: the vote judges failures
  bool moved_ = false;
};

}  // namespace

SocketOpening try_make_socket_transport(Bootstrap& bootstrap, const SocketTransportConfig& config) {
  auto t = std::make_unique<SocketTransport>(bootstrap, config);
  SocketOpening opening;
  opening.failure = t->publish(bootstrap, config.listen_address);
  if (opening.failure.empty()) opening.failure = t->connect_partners(bootstrap, config.partners, config.setup_timeout_seconds);
  if (!opening.failure.empty()) return opening;  // every rank alike: the vote saw the same records and outcomes
  if (config::flag("SMDDP_FABRIC_VERBOSE")) {
    char host[64] = {};
    gethostname(host, sizeof host - 1);
    std::fprintf(stderr, "smddp: rank %d on %s: socket transport, listening on %s:%d, %zu connections at setup\n",
                 bootstrap.rank(), host, config.listen_address.c_str(), t->port(), t->connections());
  }
  opening.transport = std::move(t);
  return opening;
}

std::unique_ptr<Transport> make_socket_transport(Bootstrap& bootstrap, const SocketTransportConfig& config) {
  SocketOpening opening = try_make_socket_transport(bootstrap, config);
  if (!opening.transport) throw TransportError(opening.failure);
  return std::move(opening.transport);
}

std::vector<int> socket_partners(const Topology& topo) {
  // The cross group as the communicator builds it: node order, this local rank.
  std::vector<int> cross;
  int me = -1;
  for (const auto& ranks : topo.node_ranks) {
    if (topo.local_rank >= static_cast<int>(ranks.size())) continue;
    if (ranks[static_cast<size_t>(topo.local_rank)] == topo.rank) me = static_cast<int>(cross.size());
    cross.push_back(ranks[static_cast<size_t>(topo.local_rank)]);
  }
  const int m = static_cast<int>(cross.size());
  std::vector<int> out;
  for (int d = 1; d < m; d *= 2) {
    for (int q : {(me + d) % m, (me - d % m + m) % m}) {
      if (q != me && std::find(out.begin(), out.end(), cross[static_cast<size_t>(q)]) == out.end()) {
        out.push_back(cross[static_cast<size_t>(q)]);
      }
    }
  }
  return out;
}

}  // namespace smddp
