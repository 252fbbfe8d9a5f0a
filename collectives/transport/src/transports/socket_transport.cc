// The socket transport (socket_transport.h). Vocabulary: a frame is a
// 16-byte head (tag, byte count) followed by the message's bytes; each peer
// has a FIFO of posted sends and one of posted receives, and only the front
// of each moves. Bytes are read only into a posted receive: until one is
// posted the data waits in the kernel, whose flow control stops the sender,
// so no message is ever buffered twice.
#include "transports/socket_transport.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "core/check.h"
#include "smddp/common/auth_frame.h"
#include "smddp/common/crypto.h"
#include "smddp/common/socket_io.h"
#include "smddp/error.h"
#include "bootstrap/tcp_store_auth.h"

namespace smddp {
namespace {

using net::Clock;

constexpr uint32_t kHelloMagic = 0x4b434f53;      // "SOCK"
constexpr uint32_t kAuthHelloMagic = 0x41434f53;  // "SOCA": a hello that proves the secret
constexpr size_t kMaxPiece = size_t{1} << 30;
// A connection must finish its hello this soon after it is accepted; the
// ranks' own do so at once (they wrote it before waiting).
constexpr double kHandshakeSeconds = 5;
// Handshakes in flight at once; more connections wait in the kernel's backlog.
constexpr size_t kMaxHandshakes = 64;
constexpr int kMaxDropLines = 10;

struct FrameHead {
  int32_t tag;
  uint32_t reserved;
  uint64_t bytes;
};
static_assert(sizeof(FrameHead) == 16);

struct Hello {
  uint32_t magic;
  int32_t rank;
  int32_t size;
};

// With a secret (docs/deploy.md, "Securing the TCP store"): the connector
// sends AuthHello, the listener answers with its nonce and its proof, the
// connector checks that and sends its own proof. Each proof is
// HMAC-SHA256(secret, role | listener | connector | size | both nonces),
// each field length-framed (common/'s AuthFrame), so neither can be
// replayed on another connection or reflected as the other.
struct AuthHello {
  uint32_t magic;
  int32_t rank;
  int32_t size;
  char nonce[store::kNonceBytes];
};
struct AuthChallenge {
  char nonce[store::kNonceBytes];
  char proof[crypto::kMacBytes];
};
static_assert(sizeof(AuthHello) == 12 + store::kNonceBytes && sizeof(AuthChallenge) == 64);

constexpr char kListener[] = "smddp-socket listener", kConnector[] = "smddp-socket connector";

crypto::AuthFrame socket_proof(const char* role, int listener, const AuthHello& hello,
                               const std::string& listener_nonce) {
  crypto::AuthFrame frame(role);
  frame.u32(static_cast<uint32_t>(listener)).u32(static_cast<uint32_t>(hello.rank))
      .u32(static_cast<uint32_t>(hello.size)).field(std::string_view(hello.nonce, sizeof hello.nonce))
      .field(listener_nonce);
  return frame;
}

// A connection the listener accepted whose hello is not complete yet.
struct Handshake {
  net::Fd fd;
  std::string from;  // "address:port", for messages
  Clock::time_point deadline;
  std::string got;       // bytes of the current message so far
  size_t want = 0;       // bytes of the current message
  bool proving = false;  // the challenge is sent; `got` is the connector's proof
  AuthHello hello{};
  std::string nonce;  // ours, with a secret
  bool done = false;  // taken as a rank's connection, or dropped
};

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

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

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
    accept_from_higher(listener.get(), deadline, config.setup_timeout_seconds);
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
        if (!say_hello(fd.get(), p, peer_name, deadline)) {
          error = "the connection broke during setup";
          continue;
        }
        peers_[static_cast<size_t>(p)].fd = std::move(fd);
        return;
      }
      usleep(50 * 1000);
    } while (Clock::now() < deadline);
    throw TransportError("socket transport: rank " + std::to_string(me_) + " cannot connect to " + peer_name +
                         " within " + seconds_text(timeout) + ": " + error);
  }

  // The connector's half of the hello; false when the connection broke
  // (worth another try). A listener that cannot prove the secret is final.
  bool say_hello(int fd, int p, const std::string& peer_name, Clock::time_point deadline) {
    int err = 0;
    const auto size = static_cast<int32_t>(peers_.size());
    if (secret_.empty()) {
      Hello hello{kHelloMagic, me_, size};
      return net::send_all(fd, &hello, sizeof hello, deadline, &err) == net::Io::Ok;
    }
    AuthHello hello{kAuthHelloMagic, me_, size, {}};
    const std::string mine = store::random_nonce();
    std::memcpy(hello.nonce, mine.data(), sizeof hello.nonce);
    AuthChallenge challenge{};
    // The listener answers once it has made its own connections: wait as long as setup may.
    if (net::send_all(fd, &hello, sizeof hello, deadline, &err) != net::Io::Ok ||
        net::recv_all(fd, &challenge, sizeof challenge, deadline, &err) != net::Io::Ok) {
      return false;
    }
    const std::string theirs(challenge.nonce, sizeof challenge.nonce);
    const std::string_view their_proof(challenge.proof, sizeof challenge.proof);
    if (!socket_proof(kListener, p, hello, theirs).verify(secret_, their_proof)) {
      throw TransportError("socket transport: rank " + std::to_string(me_) + " got a wrong proof of " +
                           "SMDDP_STORE_SECRET from " + peer_name +
                           ": the ranks' secrets differ, or another process listens there");
    }
    const std::string proof = socket_proof(kConnector, p, hello, theirs).mac(secret_);
    return net::send_all(fd, proof.data(), proof.size(), deadline, &err) == net::Io::Ok;
  }

  // Takes one connection from each higher rank, in any order. Hellos are
  // read side by side, each within its own deadline and never past its
  // fixed size, so a stranger that is silent, slow or wrong delays no
  // rank, and no connection takes a rank's slot before its hello (with a
  // secret: its proof) is complete.
  void accept_from_higher(int listener, Clock::time_point deadline, double timeout) {
    size_t expected = peers_.size() - 1 - static_cast<size_t>(me_);
    std::vector<Handshake> open;
    while (expected > 0) {
      const auto now = Clock::now();
      if (now >= deadline) throw TimeoutError(missing_text(timeout));
      auto wake = deadline;
      std::vector<pollfd> pfds;
      for (auto& h : open) {
        if (now >= h.deadline) drop(h, "no hello within " + seconds_text(kHandshakeSeconds));
        if (h.done) continue;
        wake = std::min(wake, h.deadline);
        pfds.push_back({h.fd.get(), POLLIN, 0});
      }
      std::erase_if(open, [](const Handshake& h) { return h.done; });
      const bool room = open.size() < kMaxHandshakes;
      if (room) pfds.push_back({listener, POLLIN, 0});
      if (::poll(pfds.data(), pfds.size(), std::max(1, net::ms_left(wake, 1000))) <= 0) continue;
      for (size_t i = 0; i < open.size(); ++i) {
        if (pfds[i].revents) expected -= read_hello(open[i]) ? 1 : 0;
      }
      if (room && pfds.back().revents) {
        net::Fd fd = net::accept_nonblocking(listener);
        if (!fd) continue;
        net::set_nonblocking(fd.get(), true);
        Handshake h;
        h.from = net::peer_text(fd.get());
        h.fd = std::move(fd);
        h.deadline = std::min(deadline, net::deadline_in(kHandshakeSeconds));
        h.want = secret_.empty() ? sizeof(Hello) : sizeof(AuthHello);
        open.push_back(std::move(h));
      }
    }
  }

  // Reads what has arrived of `h`'s current message; true once `h` has
  // become a rank's connection.
  bool read_hello(Handshake& h) {
    char buf[sizeof(AuthHello)];
    const ssize_t n = ::recv(h.fd.get(), buf, h.want - h.got.size(), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
    if (n <= 0) {
      if (h.proving) ++failed_proofs_;
      drop(h, h.got.empty() && !h.proving ? "" : "closed the connection during its hello");
      return false;
    }
    h.got.append(buf, static_cast<size_t>(n));
    uint32_t magic = 0;
    if (!h.proving && h.got.size() >= sizeof magic) {
      std::memcpy(&magic, h.got.data(), sizeof magic);
      if (magic != (secret_.empty() ? kHelloMagic : kAuthHelloMagic)) {
        drop(h, secret_.empty() || magic != kHelloMagic ? "not a socket-transport hello"
                                                        : "a hello without a proof of SMDDP_STORE_SECRET");
        return false;
      }
    }
    if (h.got.size() < h.want) return false;
    if (h.proving) {
      if (!socket_proof(kConnector, me_, h.hello, h.nonce).verify(secret_, h.got)) {
        ++failed_proofs_;
        drop(h, "wrong proof of SMDDP_STORE_SECRET");
        return false;
      }
      return take(h, h.hello.rank);
    }
    if (secret_.empty()) {
      Hello hello{};
      std::memcpy(&hello, h.got.data(), sizeof hello);
      return valid_rank(h, hello.rank, hello.size) && take(h, hello.rank);
    }
    std::memcpy(&h.hello, h.got.data(), sizeof h.hello);
    if (!valid_rank(h, h.hello.rank, h.hello.size)) return false;
    h.nonce = store::random_nonce();
    AuthChallenge challenge{};
    std::memcpy(challenge.nonce, h.nonce.data(), sizeof challenge.nonce);
    const std::string proof = socket_proof(kListener, me_, h.hello, h.nonce).mac(secret_);
    std::memcpy(challenge.proof, proof.data(), sizeof challenge.proof);
    // 64 bytes on a fresh connection: the kernel takes them whole or the peer is gone.
    if (::send(h.fd.get(), &challenge, sizeof challenge, MSG_NOSIGNAL | MSG_DONTWAIT) !=
        static_cast<ssize_t>(sizeof challenge)) {
      drop(h, "closed the connection during its hello");
      return false;
    }
    h.proving = true;
    h.got.clear();
    h.want = sizeof challenge.proof;
    return false;
  }

  // One of the higher ranks of this job, whose slot is still free.
  bool valid_rank(Handshake& h, int32_t rank, int32_t size) {
    if (size != static_cast<int32_t>(peers_.size()) || rank <= me_ || rank >= size) {
      drop(h, "a hello from rank " + std::to_string(rank) + " of " + std::to_string(size) +
                  ", not a higher rank of this job's " + std::to_string(peers_.size()));
      return false;
    }
    if (peers_[static_cast<size_t>(rank)].fd) {
      drop(h, "a second hello from rank " + std::to_string(rank));
      return false;
    }
    return true;
  }

  bool take(Handshake& h, int32_t rank) {
    if (!valid_rank(h, rank, static_cast<int32_t>(peers_.size()))) return false;
    peers_[static_cast<size_t>(rank)].fd = std::move(h.fd);
    h.done = true;
    return true;
  }

  // Closes a stranger's connection with one line on stderr (none for one
  // that closed without a word, as a retried connect of a rank may).
  void drop(Handshake& h, const std::string& why) {
    h.fd.reset();
    h.done = true;
    if (why.empty()) return;
    if (++dropped_ <= kMaxDropLines) {
      std::fprintf(stderr, "smddp: socket transport on rank %d: dropped the connection from %s: %s\n", me_,
                   h.from.c_str(), why.c_str());
    } else if (dropped_ == kMaxDropLines + 1) {
      std::fprintf(stderr, "smddp: socket transport on rank %d: dropped more connections; further ones are not "
                   "reported\n", me_);
    }
  }

  std::string missing_text(double timeout) const {
    std::string missing;
    for (size_t p = static_cast<size_t>(me_) + 1; p < peers_.size(); ++p) {
      if (!peers_[p].fd) missing += (missing.empty() ? "" : ", ") + std::to_string(p);
    }
    std::string text = "socket transport: rank " + std::to_string(me_) + " waited " + seconds_text(timeout) +
                       " for ranks " + missing + " to connect";
    if (failed_proofs_ > 0) {
      text += "; " + std::to_string(failed_proofs_) + " connection" + (failed_proofs_ == 1 ? "" : "s") +
              " failed the SMDDP_STORE_SECRET handshake (a rank with another secret?)";
    }
    return text;
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
  int dropped_ = 0;     // connections dropped with a line on stderr
  int failed_proofs_ = 0;
  std::vector<Peer> peers_;
  std::vector<int> active_;  // peers with posted requests
  bool moved_ = false;
};

}  // namespace

std::unique_ptr<Transport> make_socket_transport(Bootstrap& bootstrap, const SocketTransportConfig& config) {
  return std::make_unique<SocketTransport>(bootstrap, config);
}

}  // namespace smddp
