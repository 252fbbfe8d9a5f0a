// The few socket operations that the TCP store, the socket transport and
// smddp-bench's hang-report channel share: resolving host:port, listening on exactly one address, connecting
// with a time limit, and moving whole buffers before a deadline. Everything
// here reports failure as a value (an errno or a short text) so that the
// callers, who know which rank and which variable is involved, write the
// message the user sees.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace smddp::net {

using Clock = std::chrono::steady_clock;

// Seconds from now, as a point on the steady clock.
Clock::time_point deadline_in(double seconds);
// Milliseconds left until `deadline` (0 when passed), capped at `cap_ms`.
int ms_left(Clock::time_point deadline, int cap_ms = 1 << 30);

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset();
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

struct Endpoint {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string text() const;  // "1.2.3.4:5" or "[::1]:5"
};

std::string errno_text(int err);

// Resolves a numeric address or a name for TCP. On failure returns nothing
// and sets `error` (name resolution can fail for a while as DNS catches up).
std::vector<Endpoint> resolve(const std::string& host, int port, std::string* error);

// Listens on exactly `endpoint` (SO_REUSEADDR, backlog SOMAXCONN); returns
// an invalid Fd and sets `err` on failure.
Fd listen_on(const Endpoint& endpoint, int* err);

// One connect attempt that gives up after `timeout_ms`; the socket returned
// is blocking. Returns an invalid Fd and sets `err` (ETIMEDOUT on time out).
Fd connect_once(const Endpoint& endpoint, int timeout_ms, int* err);

// Accepts one pending connection on a non-blocking listener; invalid when none.
Fd accept_nonblocking(int listener);

void set_nonblocking(int fd, bool on);
void set_nodelay(int fd);

// The numeric local address of a socket (the interface that routes to its
// peer) and the local port.
std::string local_host(int fd);
int local_port(int fd);
// The peer's "address:port" ("?" when unknown), for messages.
std::string peer_text(int fd);

enum class Io { Ok, Timeout, Closed, Error };

// Moves exactly `bytes` on a socket of either blocking mode before the
// deadline. Closed: the peer closed the connection; Error: `err` set.
Io send_all(int fd, const void* data, size_t bytes, Clock::time_point deadline, int* err);
Io recv_all(int fd, void* data, size_t bytes, Clock::time_point deadline, int* err);

}  // namespace smddp::net
