// EMF sinks: a file (one document per line, appended), UDP datagrams, or a
// TCP stream of newline-terminated documents (the CloudWatch agent's input).
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "smddp/telemetry/endpoint.h"
#include "smddp/error.h"
#include "smddp/telemetry/emf.h"

namespace smddp::telemetry {
namespace {

constexpr int kCloudWatchAgentPort = 25888;
constexpr int kConnectTimeoutMs = 2000;
constexpr int kSendTimeoutSeconds = 2;
constexpr size_t kMaxDatagram = 65507;

std::string errno_text() { return std::strerror(errno); }

class FileSink final : public EmfSink {
 public:
  explicit FileSink(std::string path) : path_(std::move(path)) {
    // O_NONBLOCK: a FIFO with no reader is refused (ENXIO) instead of waited
    // on; the writes after it block as usual.
    fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0644);
    if (fd_ < 0 && errno == ENXIO) throw UsageError(fmt::format("--emf: cannot open '{}': a FIFO with no reader", path_));
    if (fd_ < 0) throw UsageError(fmt::format("--emf: cannot open '{}' for appending: {}", path_, errno_text()));
    const int flags = ::fcntl(fd_, F_GETFL);
    if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK) != 0) {
      const std::string why = errno_text();
      ::close(fd_);
      throw UsageError(fmt::format("--emf: cannot open '{}' for appending: {}", path_, why));
    }
  }
  ~FileSink() override { ::close(fd_); }

  void write(const std::string& document) override {
    const std::string line = document + "\n";  // one write: lines stay whole
    size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw Error(fmt::format("cannot write to {}: {}", path_, errno_text()));
      done += static_cast<size_t>(n);
    }
  }
  std::string describe() const override { return "file " + path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// Resolves host:port for one socket type; throws smddp::Error.
addrinfo* resolve(const HostPort& endpoint, int socktype) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = socktype;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(endpoint.host.c_str(), std::to_string(endpoint.port).c_str(), &hints, &found);
  if (rc != 0) throw Error(fmt::format("cannot resolve {}: {}", endpoint.host, gai_strerror(rc)));
  return found;
}

class UdpSink final : public EmfSink {
 public:
  explicit UdpSink(HostPort endpoint) : endpoint_(std::move(endpoint)) {}
  ~UdpSink() override {
    if (fd_ >= 0) ::close(fd_);
  }

  // Fire and forget, as the agent's protocol is: only local errors (no
  // route, resolution, size) are reported; a dead listener is not visible.
  void write(const std::string& document) override {
    if (document.size() > kMaxDatagram) {
      throw Error(fmt::format("document of {} bytes exceeds a UDP datagram", document.size()));
    }
    if (fd_ < 0) open_socket();
    const ssize_t n = ::sendto(fd_, document.data(), document.size(), MSG_NOSIGNAL,
                               reinterpret_cast<const sockaddr*>(&address_), address_length_);
    if (n < 0) throw Error(fmt::format("cannot send to {}: {}", describe(), errno_text()));
  }
  std::string describe() const override { return fmt::format("udp://{}:{}", endpoint_.host, endpoint_.port); }

 private:
  void open_socket() {
    addrinfo* found = resolve(endpoint_, SOCK_DGRAM);
    fd_ = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
    std::memcpy(&address_, found->ai_addr, found->ai_addrlen);
    address_length_ = found->ai_addrlen;
    freeaddrinfo(found);
    if (fd_ < 0) throw Error(fmt::format("cannot open a UDP socket: {}", errno_text()));
  }

  HostPort endpoint_;
  int fd_ = -1;
  sockaddr_storage address_{};
  socklen_t address_length_ = 0;
};

class TcpSink final : public EmfSink {
 public:
  explicit TcpSink(HostPort endpoint) : endpoint_(std::move(endpoint)) {}
  ~TcpSink() override { disconnect(); }

  void write(const std::string& document) override {
    if (fd_ >= 0 && peer_closed()) disconnect();
    if (fd_ < 0) connect_to_agent();
    const std::string line = document + "\n";
    size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = ::send(fd_, line.data() + done, line.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const std::string reason = errno_text();
        disconnect();
        throw Error(fmt::format("cannot send to {}: {}", describe(), reason));
      }
      done += static_cast<size_t>(n);
    }
  }
  std::string describe() const override { return fmt::format("tcp://{}:{}", endpoint_.host, endpoint_.port); }

 private:
  // The agent may have closed the connection since the last document: a
  // send would then succeed into the void once before failing.
  bool peer_closed() const {
    char byte;
    const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }

  void connect_to_agent() {
    addrinfo* found = resolve(endpoint_, SOCK_STREAM);
    std::string reason = "no address";
    for (addrinfo* a = found; a != nullptr && fd_ < 0; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
      if (fd < 0) continue;
      if (connect_with_timeout(fd, a, reason)) {
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        const timeval timeout{kSendTimeoutSeconds, 0};
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
        fd_ = fd;
      } else {
        ::close(fd);
      }
    }
    freeaddrinfo(found);
    if (fd_ < 0) throw Error(fmt::format("cannot connect to {}: {}", describe(), reason));
  }

  static bool connect_with_timeout(int fd, const addrinfo* a, std::string& reason) {
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) return true;
    if (errno != EINPROGRESS) {
      reason = errno_text();
      return false;
    }
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, kConnectTimeoutMs) != 1) {
      reason = "connection timed out";
      return false;
    }
    int error = 0;
    socklen_t length = sizeof error;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) reason = std::strerror(error);
    return error == 0;
  }

  void disconnect() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  HostPort endpoint_;
  int fd_ = -1;
};

}  // namespace

std::unique_ptr<EmfSink> open_emf_sink(const std::string& target) {
  if (target.empty()) throw UsageError("--emf: empty target");
  auto scheme = split_scheme(target);
  if (!scheme) return std::make_unique<FileSink>(target);
  const auto& [name, rest] = *scheme;
  if (name != "udp" && name != "tcp") {
    throw UsageError(fmt::format("--emf: '{}' is not a file, udp://HOST:PORT or tcp://HOST:PORT", target));
  }
  auto endpoint = parse_host_port(rest, kCloudWatchAgentPort);
  if (!endpoint) {
    throw UsageError(fmt::format("--emf: '{}' is not {}://HOST:PORT (PORT 1..65535)", target, name));
  }
  if (name == "udp") return std::make_unique<UdpSink>(*endpoint);
  return std::make_unique<TcpSink>(*endpoint);
}

}  // namespace smddp::telemetry
