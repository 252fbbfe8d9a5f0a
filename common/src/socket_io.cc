// Socket helpers for the TCP store, the socket transport and the hang report (socket_io.h).
#include "smddp/common/socket_io.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace smddp::net {

Clock::time_point deadline_in(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

int ms_left(Clock::time_point deadline, int cap_ms) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return static_cast<int>(std::min<long long>(left, cap_ms));
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.release();
  }
  return *this;
}

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string Endpoint::text() const {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
  inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
  port = ntohs(a->sin6_port);
  return "[" + std::string(host) + "]:" + std::to_string(port);
}

std::string errno_text(int err) { return std::strerror(err); }

std::vector<Endpoint> resolve(const std::string& host, int port, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
  std::vector<Endpoint> out;
  if (rc != 0) {
    if (error) *error = gai_strerror(rc);
    return out;
  }
  for (addrinfo* a = list; a; a = a->ai_next) {
    Endpoint e;
    std::memcpy(&e.addr, a->ai_addr, a->ai_addrlen);
    e.len = a->ai_addrlen;
    out.push_back(e);
  }
  freeaddrinfo(list);
  return out;
}

Fd listen_on(const Endpoint& endpoint, int* err) {
  Fd fd(::socket(endpoint.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int one = 1;
  if (!fd || setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&endpoint.addr), endpoint.len) != 0 ||
      ::listen(fd.get(), SOMAXCONN) != 0) {
    *err = errno;
    return Fd();
  }
  set_nonblocking(fd.get(), true);
  return fd;
}

Fd connect_once(const Endpoint& endpoint, int timeout_ms, int* err) {
  Fd fd(::socket(endpoint.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) {
    *err = errno;
    return Fd();
  }
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&endpoint.addr), endpoint.len) != 0) {
    if (errno != EINPROGRESS) {
      *err = errno;
      return Fd();
    }
    pollfd p{fd.get(), POLLOUT, 0};
    int n = ::poll(&p, 1, timeout_ms);
    if (n == 0) {
      *err = ETIMEDOUT;
      return Fd();
    }
    int so_error = 0;
    socklen_t len = sizeof so_error;
    if (n < 0 || getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len) != 0 || so_error != 0) {
      *err = n < 0 ? errno : (so_error ? so_error : errno);
      return Fd();
    }
  }
  set_nonblocking(fd.get(), false);
  return fd;
}

Fd accept_nonblocking(int listener) {
  for (;;) {
    int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) return Fd(fd);
    if (errno == EINTR || errno == ECONNABORTED) continue;
    return Fd();
  }
}

void set_nonblocking(int fd, bool on) {
  int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK));
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

std::string local_host(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  char host[INET6_ADDRSTRLEN] = "";
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "";
  if (a.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&a)->sin_addr, host, sizeof host);
  } else {
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&a)->sin6_addr, host, sizeof host);
  }
  return host;
}

int local_port(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port);
}

std::string peer_text(int fd) {
  Endpoint e;
  e.len = sizeof e.addr;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&e.addr), &e.len) != 0) return "?";
  return e.text();
}

namespace {

// Waits for `events` on fd until the deadline; false on time out.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, ms_left(deadline, 1000));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;  // let the I/O call report it
    if (Clock::now() >= deadline) return false;
  }
}

}  // namespace

Io send_all(int fd, const void* data, size_t bytes, Clock::time_point deadline, int* err) {
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::send(fd, p + done, bytes - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(fd, POLLOUT, deadline)) return Io::Timeout;
      continue;
    }
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) return Io::Closed;
    *err = errno;
    return Io::Error;
  }
  return Io::Ok;
}

Io recv_all(int fd, void* data, size_t bytes, Clock::time_point deadline, int* err) {
  char* p = static_cast<char*>(data);
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::recv(fd, p + done, bytes - done, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return Io::Closed;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_for(fd, POLLIN, deadline)) return Io::Timeout;
      continue;
    }
    if (errno == ECONNRESET) return Io::Closed;
    *err = errno;
    return Io::Error;
  }
  return Io::Ok;
}

}  // namespace smddp::net
