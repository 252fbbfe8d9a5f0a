// Loopback listeners for the telemetry tests: a UDP socket, a TCP server that
// reads newline-terminated documents, a one-request HTTP server, and HTTP
// clients for 127.0.0.1 and ::1. Every
// wait is bounded; destructors close what they opened.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

namespace smddp::telemetry::testing {

inline constexpr int kWaitMs = 5000;

// A socket of `type` bound to 127.0.0.1 on a free port.
inline int bound_loopback_socket(int type, int& port) {
  const int fd = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket");
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) throw std::runtime_error("bind");
  socklen_t length = sizeof sa;
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &length);
  port = ntohs(sa.sin_port);
  return fd;
}

inline bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1;
}

// A port nobody listens on (bound then closed; good enough on loopback).
inline int closed_port() {
  int port = 0;
  ::close(bound_loopback_socket(SOCK_STREAM, port));
  return port;
}

class UdpListener {
 public:
  UdpListener() { fd_ = bound_loopback_socket(SOCK_DGRAM, port_); }
  ~UdpListener() { ::close(fd_); }
  int port() const { return port_; }
  std::optional<std::string> receive(int timeout_ms = kWaitMs) {
    if (!readable(fd_, timeout_ms)) return std::nullopt;
    std::string buffer(65536, '\0');
    const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), 0);
    if (n < 0) return std::nullopt;
    buffer.resize(static_cast<size_t>(n));
    return buffer;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Listens on 127.0.0.1; accept() takes one connection, read_line() a line.
class TcpListener {
 public:
  TcpListener() {
    fd_ = bound_loopback_socket(SOCK_STREAM, port_);
    ::listen(fd_, 4);
  }
  ~TcpListener() {
    if (peer_ >= 0) ::close(peer_);
    ::close(fd_);
  }
  int port() const { return port_; }
  int listen_fd() const { return fd_; }
  bool accept(int timeout_ms = kWaitMs) {
    if (!readable(fd_, timeout_ms)) return false;
    if (peer_ >= 0) ::close(peer_);
    peer_ = ::accept(fd_, nullptr, nullptr);
    buffer_.clear();
    return peer_ >= 0;
  }
  void close_peer() {
    if (peer_ >= 0) ::close(peer_);
    peer_ = -1;
  }
  std::optional<std::string> read_line(int timeout_ms = kWaitMs) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      const auto newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return line;
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !readable(peer_, static_cast<int>(left.count()))) return std::nullopt;
      char chunk[4096];
      const ssize_t n = ::recv(peer_, chunk, sizeof chunk, 0);
      if (n <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }
  // Everything the peer sends until it stops for 200 ms or closes.
  std::string read_available(int timeout_ms = kWaitMs) {
    std::string all = buffer_;
    buffer_.clear();
    int wait = timeout_ms;
    char chunk[4096];
    while (readable(peer_, wait)) {
      const ssize_t n = ::recv(peer_, chunk, sizeof chunk, 0);
      if (n <= 0) break;
      all.append(chunk, static_cast<size_t>(n));
      wait = 200;
    }
    return all;
  }
  void send(const std::string& data) { ::send(peer_, data.data(), data.size(), MSG_NOSIGNAL); }

 private:
  int fd_ = -1;
  int peer_ = -1;
  int port_ = 0;
  std::string buffer_;
};

// A TCP connection to host:port (a numeric IPv4 or IPv6 address), or -1.
inline int connect_to(const std::string& host, int port) {
  sockaddr_storage sa{};
  socklen_t length = 0;
  auto* s6 = reinterpret_cast<sockaddr_in6*>(&sa);
  auto* s4 = reinterpret_cast<sockaddr_in*>(&sa);
  if (inet_pton(AF_INET6, host.c_str(), &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(static_cast<uint16_t>(port));
    length = sizeof *s6;
  } else if (inet_pton(AF_INET, host.c_str(), &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons(static_cast<uint16_t>(port));
    length = sizeof *s4;
  } else {
    return -1;
  }
  const int fd = ::socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&sa), length) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` on fd and returns everything read until the peer closes.
inline std::string exchange(int fd, const std::string& request) {
  std::string response;
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  char chunk[4096];
  while (readable(fd, kWaitMs)) {
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) break;
    response.append(chunk, static_cast<size_t>(n));
  }
  return response;
}

// One raw request to host:port; the whole response ("" when nobody listens).
inline std::string http_request(const std::string& host, int port, const std::string& request) {
  const int fd = connect_to(host, port);
  if (fd < 0) return "";
  std::string response = exchange(fd, request);
  ::close(fd);
  return response;
}

// A blocking HTTP GET of http://HOST:port/path (127.0.0.1 unless given).
inline std::string http_get(int port, const std::string& path, const std::string& host = "127.0.0.1") {
  const std::string authority = host.find(':') == std::string::npos ? host : "[" + host + "]";
  return http_request(host, port, "GET " + path + " HTTP/1.0\r\nHost: " + authority + "\r\n\r\n");
}

// Whether ::1 can be bound here (IPv6 may be off in a container).
inline bool ipv6_loopback() {
  const int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in6 sa{};
  sa.sin6_family = AF_INET6;
  sa.sin6_addr = in6addr_loopback;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  ::close(fd);
  return ok;
}

// A port nobody listens on at ::1 (bound then closed).
inline int closed_port_v6() {
  const int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in6 sa{};
  sa.sin6_family = AF_INET6;
  sa.sin6_addr = in6addr_loopback;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) throw std::runtime_error("bind ::1");
  socklen_t length = sizeof sa;
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &length);
  ::close(fd);
  return ntohs(sa.sin6_port);
}

}  // namespace smddp::telemetry::testing

#include <thread>

namespace smddp::telemetry::testing {

// Answers one HTTP request on 127.0.0.1 with `status` from a thread and keeps
// the request (request line, headers and body) for the test to inspect.
class HttpOnce {
 public:
  explicit HttpOnce(int status) : status_(status) {
    thread_ = std::thread([this] { serve(); });
  }
  ~HttpOnce() { thread_.join(); }
  int port() const { return listener_.port(); }
  // Valid after the destructor or once the client got its answer.
  const std::string& request() const { return request_; }

 private:
  void serve() {
    if (!listener_.accept()) return;
    while (true) {
      const std::string more = listener_.read_available(kWaitMs);
      if (more.empty()) break;
      request_ += more;
      const auto end = request_.find("\r\n\r\n");
      if (end == std::string::npos) continue;
      size_t length = 0;
      const auto header = request_.find("Content-Length: ");
      if (header != std::string::npos && header < end) length = std::stoul(request_.substr(header + 16));
      if (request_.size() >= end + 4 + length) break;
    }
    const std::string reason = status_ < 300 ? "OK" : "Bad Request";
    const std::string body = status_ < 300 ? "" : "pushed metrics are invalid";
    listener_.send("HTTP/1.1 " + std::to_string(status_) + " " + reason + "\r\nContent-Length: " +
                   std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
    listener_.close_peer();
  }

  int status_;
  TcpListener listener_;
  std::string request_;
  std::thread thread_;
};

}  // namespace smddp::telemetry::testing
