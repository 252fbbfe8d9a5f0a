#include "smddp/telemetry/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <prometheus/text_serializer.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fmt/format.h>

#include "smddp/error.h"

namespace smddp::telemetry {
namespace {

constexpr int kWorkers = 4;
constexpr size_t kMaxRequest = 8192;
constexpr int kConnectionMs = 5000;

std::string strip_brackets(const std::string& bind) {
  if (bind.size() >= 2 && bind.front() == '[' && bind.back() == ']') return bind.substr(1, bind.size() - 2);
  return bind;
}

void write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, kConnectionMs) <= 0) return;
    ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::string response(int code, const char* status, const std::string& type, const std::string& body, bool head) {
  return fmt::format("HTTP/1.0 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", code, status, type,
                     body.size()) +
         (head ? "" : body);
}

}  // namespace

MetricsServer::MetricsServer(const std::string& bind, int port, std::shared_ptr<prometheus::Collectable> metrics)
    : address_(strip_brackets(bind)), metrics_(std::move(metrics)) {
  sockaddr_storage sa{};
  socklen_t len = 0;
  in6_addr v6{};
  in_addr v4{};
  const std::string where = fmt::format("{}:{}", address_.find(':') != std::string::npos ? "[" + address_ + "]" : address_, port);
  if (inet_pton(AF_INET6, address_.c_str(), &v6) == 1) {
    v6_ = true;
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&sa);
    s6->sin6_family = AF_INET6;
    s6->sin6_addr = v6;
    s6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in6);
  } else if (inet_pton(AF_INET, address_.c_str(), &v4) == 1) {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&sa);
    s4->sin_family = AF_INET;
    s4->sin_addr = v4;
    s4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in);
  } else {
    throw UsageError(fmt::format("cannot serve /metrics: bind address '{}' is not an IPv4 or IPv6 address", bind));
  }
  if (port < 0 || port > 65535) throw UsageError(fmt::format("cannot serve /metrics: port {} is outside 0..65535", port));
  fd_ = socket(v6_ ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw UsageError(fmt::format("cannot serve /metrics on {}: {}", where, std::strerror(errno)));
  const int one = 1, zero = 0;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // [::] serves IPv4 clients too, as 0.0.0.0 does.
  if (v6_) setsockopt(fd_, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&sa), len) != 0 || listen(fd_, 128) != 0) {
    const int saved = errno;
    close(fd_);
    throw UsageError(fmt::format("cannot serve /metrics on {}: {}", where, std::strerror(saved)));
  }
  sockaddr_storage bound{};
  socklen_t blen = sizeof bound;
  getsockname(fd_, reinterpret_cast<sockaddr*>(&bound), &blen);
  port_ = ntohs(v6_ ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  threads_.emplace_back(&MetricsServer::accept_loop, this);
  for (int i = 0; i < kWorkers; ++i) threads_.emplace_back(&MetricsServer::worker, this);
}

MetricsServer::~MetricsServer() {
  stop_ = true;
  ready_.notify_all();
  for (auto& t : threads_) t.join();
  for (int fd : pending_) close(fd);
  close(fd_);
}

std::string MetricsServer::url() const {
  return fmt::format("http://{}:{}/metrics", v6_ ? "[" + address_ + "]" : address_, port_);
}

void MetricsServer::accept_loop() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    std::lock_guard lock(mutex_);
    pending_.push_back(c);
    ready_.notify_one();
  }
}

void MetricsServer::worker() {
  for (;;) {
    int fd = -1;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stop_ || !pending_.empty(); });
      if (stop_) return;
      fd = pending_.front();
      pending_.pop_front();
    }
    serve(fd);
    close(fd);
  }
}

void MetricsServer::serve(int fd) {
  // The request line and headers, within the size and time bounds.
  std::string request;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kConnectionMs);
  while (request.find("\r\n\r\n") == std::string::npos && request.find("\n\n") == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0 || request.size() >= kMaxRequest) return;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) return;
    char buf[2048];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    request.append(buf, static_cast<size_t>(n));
  }
  const std::string line = request.substr(0, request.find_first_of("\r\n"));
  const size_t sp1 = line.find(' '), sp2 = line.find(' ', sp1 == std::string::npos ? 0 : sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) {
    write_all(fd, response(400, "Bad Request", "text/plain", "bad request\n", false));
    return;
  }
  const std::string method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const bool head = method == "HEAD";
  if (method != "GET" && !head) {
    write_all(fd, response(405, "Method Not Allowed", "text/plain", "only GET and HEAD\n", false));
    return;
  }
  const std::string path = target.substr(0, target.find('?'));
  if (path != "/metrics") {
    write_all(fd, response(404, "Not Found", "text/plain", "smddp-diag exporter: the metrics are at /metrics\n", head));
    return;
  }
  std::string body;
  try {
    body = prometheus::TextSerializer().Serialize(metrics_->Collect());
  } catch (const std::exception& e) {
    write_all(fd, response(500, "Internal Server Error", "text/plain", std::string(e.what()) + "\n", head));
    return;
  }
  write_all(fd, response(200, "OK", "text/plain; version=0.0.4; charset=utf-8", body, head));
}

}  // namespace smddp::telemetry
