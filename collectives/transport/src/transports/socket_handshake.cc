// The socket transport's connection handshake (socket_handshake.h).
#include "transports/socket_handshake.h"

#include <sys/socket.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "bootstrap/tcp_store_auth.h"
#include "smddp/common/auth_frame.h"
#include "smddp/common/crypto.h"
#include "smddp/error.h"

namespace smddp::socket_setup {
namespace {

using net::Clock;

constexpr uint32_t kHelloMagic = 0x4b434f53;      // "SOCK"
constexpr uint32_t kAuthHelloMagic = 0x41434f53;  // "SOCA": a hello that proves the secret
// A connection must finish its hello this soon after it is accepted; the
// ranks' own do so at once (they wrote it on connecting, and the connector
// waits in progress() for the answer).
constexpr double kHandshakeSeconds = 5;
// Handshakes in flight at once; more connections wait in the kernel's backlog.
constexpr size_t kMaxHandshakes = 64;
constexpr int kMaxDropLines = 10;

struct Hello {
  uint32_t magic;
  int32_t rank;
  int32_t size;
};
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

}  // namespace

Acceptor::Acceptor(int me, int size, const std::string& secret, std::function<bool(int)> free_slot)
    : me_(me), size_(size), secret_(secret), free_slot_(std::move(free_slot)) {}

void Acceptor::poll(int listener, int wait_ms, const std::function<void(int, net::Fd)>& take) {
  auto wake = net::Clock::now() + std::chrono::milliseconds(wait_ms);
  std::vector<pollfd> pfds;
  for (auto& h : open_) {
    wake = std::min(wake, h.deadline);
    pfds.push_back({h.fd.get(), POLLIN, 0});
  }
  const bool room = open_.size() < kMaxHandshakes;
  if (room) pfds.push_back({listener, POLLIN, 0});
  const int n = ::poll(pfds.data(), pfds.size(), net::ms_left(wake));
  const auto now = Clock::now();
  for (size_t i = 0; i < open_.size(); ++i) {
    Handshake& h = open_[i];
    // Read before judging the deadline: a rank's hello may have waited in
    // the kernel while this rank was busy elsewhere.
    if ((n > 0 && pfds[i].revents) || now >= h.deadline) read_hello(h, take);
    if (!h.done && now >= h.deadline) drop(h, "no hello within " + seconds_text(kHandshakeSeconds));
  }
  std::erase_if(open_, [](const Handshake& h) { return h.done; });
  if (!room || n <= 0 || !pfds.back().revents) return;
  while (open_.size() < kMaxHandshakes) {
    net::Fd fd = net::accept_nonblocking(listener);
    if (!fd) break;
    net::set_nonblocking(fd.get(), true);
    Handshake h;
    h.from = net::peer_text(fd.get());
    h.fd = std::move(fd);
    h.deadline = net::deadline_in(kHandshakeSeconds);
    h.want = secret_.empty() ? sizeof(Hello) : sizeof(AuthHello);
    open_.push_back(std::move(h));
    // Its hello is usually there already.
    read_hello(open_.back(), take);
    if (open_.back().done) open_.pop_back();
  }
}

// Reads what has arrived of `h`'s current message; true once `h` has
// become a rank's connection.
bool Acceptor::read_hello(Handshake& h, const std::function<void(int, net::Fd)>& take) {
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
  if (!h.proving) {
    Hello hello{};
    std::memcpy(&hello, h.got.data(), sizeof hello);  // an AuthHello begins as a Hello
    if (!valid_rank(h, hello.rank, hello.size)) return false;
    h.rank = hello.rank;
    if (!secret_.empty()) {
      h.hello = h.got;
      AuthHello auth{};
      std::memcpy(&auth, h.hello.data(), sizeof auth);
      h.nonce = store::random_nonce();
      AuthChallenge challenge{};
      std::memcpy(challenge.nonce, h.nonce.data(), sizeof challenge.nonce);
      const std::string proof = socket_proof(kListener, me_, auth, h.nonce).mac(secret_);
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
  } else {
    AuthHello auth{};
    std::memcpy(&auth, h.hello.data(), sizeof auth);
    if (!socket_proof(kConnector, me_, auth, h.nonce).verify(secret_, h.got)) {
      ++failed_proofs_;
      drop(h, "wrong proof of SMDDP_STORE_SECRET");
      return false;
    }
    // Another connection may have taken the slot while this one proved itself.
    if (!valid_rank(h, h.rank, size_)) return false;
  }
  take(h.rank, std::move(h.fd));
  h.done = true;
  return true;
}

// One of the higher ranks of this job, whose slot is still free.
bool Acceptor::valid_rank(Handshake& h, int32_t rank, int32_t size) {
  if (size != size_ || rank <= me_ || rank >= size) {
    drop(h, "a hello from rank " + std::to_string(rank) + " of " + std::to_string(size) +
                ", not a higher rank of this job's " + std::to_string(size_));
    return false;
  }
  if (!free_slot_(rank)) {
    drop(h, "a second hello from rank " + std::to_string(rank));
    return false;
  }
  return true;
}

// Closes a stranger's connection with one line on stderr (none for one
// that closed without a word, as a retried connect of a rank may).
void Acceptor::drop(Handshake& h, const std::string& why) {
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

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

Dialer::Dialer(int me, int listener, int size, const std::string& secret, std::string peer_name,
               std::vector<net::Endpoint> endpoints)
    : me_(me), listener_(listener), size_(size), secret_(secret), peer_name_(std::move(peer_name)),
      endpoints_(std::move(endpoints)) {
  start();
}

void Dialer::start() {
  stage_ = Stage::Connecting;
  if (endpoints_.empty()) return failed("no address");
  const net::Endpoint& ep = endpoints_[next_endpoint_++ % endpoints_.size()];
  fd_ = net::Fd(::socket(ep.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd_) return failed(net::errno_text(errno));
  if (::connect(fd_.get(), reinterpret_cast<const sockaddr*>(&ep.addr), ep.len) == 0) {
    stage_ = Stage::Hello;
  } else if (errno != EINPROGRESS) {
    failed(net::errno_text(errno));
  }
}

void Dialer::failed(const std::string& why) {
  error_ = why;
  fd_.reset();
  stage_ = Stage::Pause;
  retry_at_ = net::deadline_in(0.05);
}

net::Fd Dialer::step() {
  if (stage_ == Stage::Pause) {
    if (Clock::now() < retry_at_) return {};
    start();
  }
  if (stage_ == Stage::Connecting) {
    pollfd p{fd_.get(), POLLOUT, 0};
    if (::poll(&p, 1, 0) <= 0) return {};
    int so_error = 0;
    socklen_t len = sizeof so_error;
    if (getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &so_error, &len) != 0 || so_error != 0) {
      failed(net::errno_text(so_error ? so_error : errno));
      return {};
    }
    stage_ = Stage::Hello;
  }
  if (stage_ == Stage::Hello) {
    if (secret_.empty()) {
      const Hello hello{kHelloMagic, me_, size_};
      hello_.assign(reinterpret_cast<const char*>(&hello), sizeof hello);
    } else {
      AuthHello hello{kAuthHelloMagic, me_, size_, {}};
      const std::string mine = store::random_nonce();
      std::memcpy(hello.nonce, mine.data(), sizeof hello.nonce);
      hello_.assign(reinterpret_cast<const char*>(&hello), sizeof hello);
    }
    // A few bytes on a fresh connection: the kernel takes them whole or the peer is gone.
    if (::send(fd_.get(), hello_.data(), hello_.size(), MSG_NOSIGNAL | MSG_DONTWAIT) !=
        static_cast<ssize_t>(hello_.size())) {
      failed("the connection broke during its hello");
      return {};
    }
    if (secret_.empty()) return std::move(fd_);
    stage_ = Stage::Challenge;
    got_.clear();
  }
  // Stage::Challenge: the listener answers once it looks at its listener.
  char buf[sizeof(AuthChallenge)];
  const ssize_t n = ::recv(fd_.get(), buf, sizeof(AuthChallenge) - got_.size(), MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return {};
  if (n <= 0) {
    failed("the connection broke during its hello");
    return {};
  }
  got_.append(buf, static_cast<size_t>(n));
  if (got_.size() < sizeof(AuthChallenge)) return {};
  AuthHello hello{};
  std::memcpy(&hello, hello_.data(), sizeof hello);
  AuthChallenge challenge{};
  std::memcpy(&challenge, got_.data(), sizeof challenge);
  const std::string theirs(challenge.nonce, sizeof challenge.nonce);
  const std::string_view their_proof(challenge.proof, sizeof challenge.proof);
  if (!socket_proof(kListener, listener_, hello, theirs).verify(secret_, their_proof)) {
    throw TransportError("socket transport: rank " + std::to_string(me_) + " got a wrong proof of " +
                         "SMDDP_STORE_SECRET from " + peer_name_ +
                         ": the ranks' secrets differ, or another process listens there");
  }
  const std::string proof = socket_proof(kConnector, listener_, hello, theirs).mac(secret_);
  if (::send(fd_.get(), proof.data(), proof.size(), MSG_NOSIGNAL | MSG_DONTWAIT) !=
      static_cast<ssize_t>(proof.size())) {
    failed("the connection broke during its hello");
    return {};
  }
  return std::move(fd_);
}

}  // namespace smddp::socket_setup
