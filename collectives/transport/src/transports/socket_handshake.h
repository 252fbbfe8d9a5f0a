// The socket transport's connection handshake (socket_transport.h): the
// higher rank of each pair connects to the lower one's listener and names
// itself in a hello; the lower rank never connects, so two ranks that want
// each other at once cannot make two connections. Without a secret the
// hello is magic, rank and job size. With one (docs/deploy.md, "Securing
// the TCP store") it is a mutual challenge-response: the connector sends
// its nonce, the listener answers with its nonce and its proof, the
// connector checks that and sends its own proof. Each proof is
// HMAC-SHA256(secret, role | listener | connector | size | both nonces),
// each field length-framed (common/'s AuthFrame), so neither can be
// replayed on another connection or reflected as the other.
//
// Both halves are non-blocking state machines, advanced from the
// transport's progress(): a rank that waits for a connection keeps moving
// its other peers' messages, and one that is not listening yet (busy
// elsewhere) stalls no connector (the kernel completes the TCP handshake
// and holds the hello).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "smddp/common/socket_io.h"

namespace smddp::socket_setup {

// "2.5 s", for messages.
std::string seconds_text(double s);

// The connector's half of one connection to rank `listener`. `peer_name`
// ("rank 1 on h0 (10.0.0.1:4000)") is for messages.
class Dialer {
 public:
  Dialer(int me, int listener, int size, const std::string& secret, std::string peer_name,
         std::vector<net::Endpoint> endpoints);

  // Advances without blocking; returns the connection once the hello is
  // done. A refused or broken attempt is retried after a pause; error()
  // says what the last one met. A listener that cannot prove the secret is
  // final: TransportError.
  net::Fd step();
  // The TCP connection is up (the peer's listener exists); what is left is
  // the peer's answer, which comes when it next looks at its listener.
  bool connected() const { return stage_ != Stage::Connecting && stage_ != Stage::Pause; }
  const std::string& error() const { return error_; }
  const std::string& peer_name() const { return peer_name_; }

 private:
  enum class Stage { Connecting, Pause, Hello, Challenge };
  void start();
  void failed(const std::string& why);

  int me_, listener_, size_;
  const std::string& secret_;
  std::string peer_name_;
  std::vector<net::Endpoint> endpoints_;
  size_t next_endpoint_ = 0;
  Stage stage_ = Stage::Connecting;
  net::Fd fd_;
  net::Clock::time_point retry_at_{};
  std::string hello_;  // bytes of our hello (kept for the proof)
  std::string got_;    // bytes of the challenge so far
  std::string error_ = "no answer";  // until an attempt fails otherwise
};

// The listener's half: accepts connections and reads their hellos side by
// side, each within its own few seconds and never past its fixed size, so
// a stranger that is silent, slow or wrong delays no rank, and no
// connection takes a rank's slot before its hello (with a secret: its
// proof) is complete; a stranger is dropped with one line on stderr.
class Acceptor {
 public:
  // `free_slot(rank)`: rank (> me, < size) has no connection yet.
  Acceptor(int me, int size, const std::string& secret, std::function<bool(int)> free_slot);

  // Accepts what is pending and advances open hellos, waiting at most
  // `wait_ms` for something to happen; calls `take(rank, fd)` for each
  // connection whose hello is complete.
  void poll(int listener, int wait_ms, const std::function<void(int, net::Fd)>& take);
  bool busy() const { return !open_.empty(); }
  // Connections whose hello failed the secret's proof, for messages.
  int failed_proofs() const { return failed_proofs_; }

 private:
  // A connection accepted whose hello is not complete yet.
  struct Handshake {
    net::Fd fd;
    std::string from;  // "address:port", for messages
    net::Clock::time_point deadline;
    std::string got;       // bytes of the current message so far
    size_t want = 0;       // bytes of the current message
    bool proving = false;  // the challenge is sent; `got` is the connector's proof
    std::string hello;     // the connector's hello, with a secret
    int32_t rank = -1;
    std::string nonce;  // ours, with a secret
    bool done = false;  // taken as a rank's connection, or dropped
  };
  bool read_hello(Handshake& h, const std::function<void(int, net::Fd)>& take);
  bool valid_rank(Handshake& h, int32_t rank, int32_t size);
  void drop(Handshake& h, const std::string& why);

  int me_, size_;
  const std::string& secret_;
  std::function<bool(int)> free_slot_;
  std::vector<Handshake> open_;
  int dropped_ = 0;
  int failed_proofs_ = 0;
};

}  // namespace smddp::socket_setup
