// The socket transport's setup handshake (socket_handshake.h).
#include "transports/socket_handshake.h"

#include <sys/socket.h>
#include <poll.h>

#include <algorithm>
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
// ranks' own do so at once (they wrote it before waiting).
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

class HelloListener {
 public:
  HelloListener(int me, const std::string& secret, std::vector<net::Fd>& by_rank)
      : me_(me), secret_(secret), by_rank_(by_rank) {}

  void run(int listener, Clock::time_point deadline, double timeout) {
    size_t expected = by_rank_.size() - 1 - static_cast<size_t>(me_);
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

 private:
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
    if (size != static_cast<int32_t>(by_rank_.size()) || rank <= me_ || rank >= size) {
      drop(h, "a hello from rank " + std::to_string(rank) + " of " + std::to_string(size) +
                  ", not a higher rank of this job's " + std::to_string(by_rank_.size()));
      return false;
    }
    if (by_rank_[static_cast<size_t>(rank)]) {
      drop(h, "a second hello from rank " + std::to_string(rank));
      return false;
    }
    return true;
  }

  bool take(Handshake& h, int32_t rank) {
    if (!valid_rank(h, rank, static_cast<int32_t>(by_rank_.size()))) return false;
    by_rank_[static_cast<size_t>(rank)] = std::move(h.fd);
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
    for (size_t p = static_cast<size_t>(me_) + 1; p < by_rank_.size(); ++p) {
      if (!by_rank_[p]) missing += (missing.empty() ? "" : ", ") + std::to_string(p);
    }
    std::string text = "socket transport: rank " + std::to_string(me_) + " waited " + seconds_text(timeout) +
                       " for ranks " + missing + " to connect";
    if (failed_proofs_ > 0) {
      text += "; " + std::to_string(failed_proofs_) + " connection" + (failed_proofs_ == 1 ? "" : "s") +
              " failed the SMDDP_STORE_SECRET handshake (a rank with another secret?)";
    }
    return text;
  }

  int me_;
  const std::string& secret_;  // SMDDP_STORE_SECRET; empty: hellos prove nothing
  std::vector<net::Fd>& by_rank_;
  int dropped_ = 0;  // connections dropped with a line on stderr
  int failed_proofs_ = 0;
};

}  // namespace

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

bool say_hello(int fd, int me, int listener, int size, const std::string& secret, const std::string& peer_name,
               Clock::time_point deadline) {
  int err = 0;
  if (secret.empty()) {
    Hello hello{kHelloMagic, me, size};
    return net::send_all(fd, &hello, sizeof hello, deadline, &err) == net::Io::Ok;
  }
  AuthHello hello{kAuthHelloMagic, me, size, {}};
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
  if (!socket_proof(kListener, listener, hello, theirs).verify(secret, their_proof)) {
    throw TransportError("socket transport: rank " + std::to_string(me) + " got a wrong proof of " +
                         "SMDDP_STORE_SECRET from " + peer_name +
                         ": the ranks' secrets differ, or another process listens there");
  }
  const std::string proof = socket_proof(kConnector, listener, hello, theirs).mac(secret);
  return net::send_all(fd, proof.data(), proof.size(), deadline, &err) == net::Io::Ok;
}

void accept_from_higher(int listener, int me, const std::string& secret, std::vector<net::Fd>& by_rank,
                        Clock::time_point deadline, double timeout) {
  HelloListener(me, secret, by_rank).run(listener, deadline, timeout);
}

}  // namespace smddp::socket_setup
