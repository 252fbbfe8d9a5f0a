#include "smddp/telemetry/http_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>
#include <fmt/format.h>

#include "smddp/error.h"

namespace smddp::telemetry {
namespace {

using Clock = std::chrono::steady_clock;

// Connections the kernel holds before accept (capped by net.core.somaxconn);
// what this process holds is bounded by max_pending.
constexpr int kListenBacklog = 128;
constexpr const char* kPrometheusText = "text/plain; version=0.0.4; charset=utf-8";

std::string strip_brackets(const std::string& bind) {
  if (bind.size() >= 2 && bind.front() == '[' && bind.back() == ']') return bind.substr(1, bind.size() - 2);
  return bind;
}

// A host name as a resolver takes it: letters, digits, '.', '-', '_', with a
// letter somewhere. All digits and dots is a mistyped IPv4 literal
// ("300.1.1.1"), not a name to look up.
bool looks_like_host_name(const std::string& text) {
  const bool chars = std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '-' || c == '_';
  });
  const bool letter = std::any_of(text.begin(), text.end(), [](unsigned char c) { return std::isalpha(c); });
  return !text.empty() && chars && letter;
}

struct AddrInfo {
  addrinfo* list = nullptr;
  ~AddrInfo() {
    if (list) freeaddrinfo(list);
  }
};

std::string numeric_host(const sockaddr* sa, socklen_t len) {
  char host[NI_MAXHOST] = {};
  if (getnameinfo(sa, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return "?";
  return host;
}

std::string bracketed(const std::string& address, int family) {
  return family == AF_INET6 ? "[" + address + "]" : address;
}

// Failures that belong to one pending connection (it is gone, the next
// accept can go at once) against a lack of descriptors or memory (EMFILE,
// ENFILE, ENOBUFS, ENOMEM) or anything unexpected, after which the listening
// socket stays readable and an immediate retry would spin.
bool retry_at_once(int error) {
  switch (error) {
    case EINTR:
    case EAGAIN:
#if EWOULDBLOCK != EAGAIN
    case EWOULDBLOCK:
#endif
    case ECONNABORTED:
    case EPROTO:
    case EPERM:
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
      return true;
    default:
      return false;
  }
}

std::string response(int code, const char* status, const std::string& type, const std::string& body, bool head) {
  return fmt::format("HTTP/1.0 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", code,
                     status, type, body.size()) +
         (head ? "" : body);
}

}  // namespace

MetricsServer::MetricsServer(const std::string& bind, int port, std::shared_ptr<prometheus::Collectable> metrics,
                             MetricsServerOptions options)
    : options_(std::move(options)), metrics_(std::move(metrics)) {
  if (!metrics_) throw UsageError("cannot serve /metrics: nothing to serve");
  if (port < 0 || port > 65535) throw UsageError(fmt::format("cannot serve /metrics: port {} is outside 0..65535", port));
  options_.workers = std::max(options_.workers, 1);
  options_.max_pending = std::max<size_t>(options_.max_pending, 1);

  // A literal as given; brackets only around an IPv6 one.
  const bool brackets = bind != strip_brackets(bind);
  const std::string host = strip_brackets(bind);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  hints.ai_family = brackets ? AF_INET6 : AF_UNSPEC;
  AddrInfo found;
  const std::string service = std::to_string(port);
  if (host.empty() || getaddrinfo(host.c_str(), service.c_str(), &hints, &found.list) != 0) {
    if (brackets || !looks_like_host_name(host)) {
      throw UsageError(fmt::format("cannot serve /metrics: bind address '{}' is not an IPv4 or IPv6 address or a host name",
                                   bind));
    }
    hints.ai_flags = AI_NUMERICSERV;
    if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found.list); rc != 0) {
      throw UsageError(fmt::format("cannot serve /metrics: bind address '{}' does not resolve: {}", bind,
                                   rc == EAI_SYSTEM ? std::strerror(errno) : gai_strerror(rc)));
    }
  }

  // A name may resolve to several addresses (localhost: ::1 and 127.0.0.1):
  // the first that binds is served, the first failure is the one reported.
  std::string first_error;
  for (const addrinfo* a = found.list; a != nullptr && fd_ < 0; a = a->ai_next) {
    if (a->ai_family != AF_INET && a->ai_family != AF_INET6) continue;
    const std::string where = fmt::format("{}:{}", bracketed(numeric_host(a->ai_addr, a->ai_addrlen), a->ai_family), port);
    const int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    const int one = 1;
    bool ok = fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0;
    if (ok && a->ai_family == AF_INET6) {
      // [::] serves IPv4 clients too, as 0.0.0.0 does; a given IPv6 address only itself.
      const auto* s6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      const int v6only = IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr) ? 0 : 1;
      ok = setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only) == 0;
    }
    ok = ok && ::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, kListenBacklog) == 0;
    if (!ok) {
      if (first_error.empty()) first_error = fmt::format("cannot serve /metrics on {}: {}", where, std::strerror(errno));
      if (fd >= 0) close(fd);
      continue;
    }
    fd_ = fd;
    v6_ = a->ai_family == AF_INET6;
  }
  if (fd_ < 0) {
    throw UsageError(first_error.empty() ? fmt::format("cannot serve /metrics: '{}' has no IPv4 or IPv6 address", bind)
                                         : first_error);
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  getsockname(fd_, reinterpret_cast<sockaddr*>(&bound), &length);
  address_ = numeric_host(reinterpret_cast<sockaddr*>(&bound), length);
  port_ = ntohs(v6_ ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    const int saved = errno;
    close(fd_);
    throw Error(fmt::format("cannot serve /metrics: eventfd: {}", std::strerror(saved)));
  }
  threads_.emplace_back(&MetricsServer::accept_loop, this);
  for (int i = 0; i < options_.workers; ++i) threads_.emplace_back(&MetricsServer::worker, this);
}

MetricsServer::~MetricsServer() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = write(wake_fd_, &one, sizeof one);
  ready_.notify_all();
  for (auto& t : threads_) t.join();
  for (const Pending& p : idle_) close(p.fd);
  for (const Pending& p : ready_queue_) close(p.fd);
  close(fd_);
  close(wake_fd_);
}

std::string MetricsServer::host_port() const {
  return fmt::format("{}:{}", bracketed(address_, v6_ ? AF_INET6 : AF_INET), port_);
}

std::string MetricsServer::url() const { return fmt::format("http://{}/metrics", host_port()); }

MetricsServer::Counters MetricsServer::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

// Waits until fd has `events` (true), the deadline passes or the server
// stops (false).
bool MetricsServer::wait_for(int fd, short events, Clock::time_point deadline) const {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0 || stop_) return false;
    pollfd p[2] = {{wake_fd_, POLLIN, 0}, {fd, events, 0}};
    const int n = poll(p, 2, static_cast<int>(std::min<long long>(left, INT_MAX)));
    if (n < 0 && errno != EINTR) return false;
    if (n <= 0) continue;
    if (p[0].revents != 0) return false;
    if (p[1].revents != 0) return true;
  }
}

void MetricsServer::accept_loop() {
  auto paused_until = Clock::time_point::min();
  std::vector<pollfd> fds;
  while (!stop_) {
    // The eventfd, the listening socket (left out while accepting pauses)
    // and every connection still waiting for its request.
    const auto now = Clock::now();
    const bool paused = now < paused_until;
    fds.assign({{wake_fd_, POLLIN, 0}, {paused ? -1 : fd_, POLLIN, 0}});
    auto wake_at = paused ? paused_until : Clock::time_point::max();
    for (const Pending& p : idle_) {
      fds.push_back({p.fd, POLLIN, 0});
      wake_at = std::min(wake_at, p.deadline);
    }
    int timeout = -1;
    if (wake_at != Clock::time_point::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(wake_at - now).count();
      timeout = static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
    }
    const int n = poll(fds.data(), fds.size(), timeout);
    if (n < 0) {
      if (errno != EINTR) paused_until = Clock::now() + options_.accept_backoff;  // ENOMEM: do not spin either
      continue;
    }
    if (fds[0].revents != 0) break;
    // Requests that arrived go to the workers; idle connections past their
    // deadline are closed. fds[2 + i] is idle_[i].
    const auto after = Clock::now();
    std::deque<Pending> still_idle;
    uint64_t expired = 0;
    std::vector<Pending> arrived;
    for (size_t i = 0; i < idle_.size(); ++i) {
      if (fds[2 + i].revents != 0) {
        arrived.push_back(idle_[i]);
      } else if (after >= idle_[i].deadline) {
        close(idle_[i].fd);
        ++expired;
      } else {
        still_idle.push_back(idle_[i]);
      }
    }
    idle_.swap(still_idle);
    {
      std::lock_guard lock(mutex_);
      counters_.expired += expired;
      for (const Pending& p : arrived) ready_queue_.push_back(p);
    }
    for (size_t i = 0; i < arrived.size(); ++i) ready_.notify_one();
    if (fds[1].revents != 0) accept_one(paused_until);
  }
}

void MetricsServer::accept_one(Clock::time_point& paused_until) {
  const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  const int error = errno;
  std::lock_guard lock(mutex_);
  ++counters_.accept_calls;
  if (c < 0) {
    if (!retry_at_once(error)) {
      ++counters_.accept_backoffs;
      paused_until = Clock::now() + options_.accept_backoff;
    }
    return;
  }
  ++counters_.accepted;
  idle_.push_back({c, Clock::now() + options_.connection_timeout});
  if (idle_.size() + ready_queue_.size() > options_.max_pending) {
    // The oldest waiting connection goes: it has used the most of its
    // deadline, and a scraper's fresh request is the newest. Idle ones
    // (no request yet) go before requests that wait for a worker.
    auto& from = idle_.size() > 1 ? idle_ : ready_queue_;
    close(from.front().fd);
    from.pop_front();
    ++counters_.dropped;
  }
  counters_.pending_high_water = std::max(counters_.pending_high_water, idle_.size() + ready_queue_.size());
}

void MetricsServer::worker() {
  for (;;) {
    Pending p{};
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stop_ || !ready_queue_.empty(); });
      if (stop_) return;
      p = ready_queue_.front();
      ready_queue_.pop_front();
    }
    serve(p.fd, p.deadline);
    close(p.fd);
    std::lock_guard lock(mutex_);
    ++counters_.served;
  }
}

void MetricsServer::write_all(int fd, const std::string& data, Clock::time_point deadline) const {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (errno != EINTR && !wait_for(fd, POLLOUT, deadline)) return;
    } else {
      return;
    }
  }
}

void MetricsServer::serve(int fd, Clock::time_point deadline) {
  // The request line and headers, within the size cap and the deadline (a
  // connection that waited out its deadline in the queue ends here at once).
  std::string request;
  size_t end = std::string::npos;
  while ((end = request.find("\r\n\r\n")) == std::string::npos && (end = request.find("\n\n")) == std::string::npos) {
    if (request.size() >= options_.max_request_bytes) break;
    char buf[2048];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      request.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (errno != EINTR && !wait_for(fd, POLLIN, deadline)) return;
    } else {
      return;  // closed or reset before a whole request
    }
  }
  if (end == std::string::npos || end > options_.max_request_bytes) {
    write_all(fd, response(431, "Request Header Fields Too Large", "text/plain",
                           fmt::format("requests are limited to {} bytes\n", options_.max_request_bytes), false),
              deadline);
    return;
  }
  const std::string line = request.substr(0, request.find_first_of("\r\n"));
  const size_t sp1 = line.find(' '), sp2 = line.find(' ', sp1 == std::string::npos ? 0 : sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) {
    write_all(fd, response(400, "Bad Request", "text/plain", "bad request\n", false), deadline);
    return;
  }
  const std::string method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const bool head = method == "HEAD";
  if (method != "GET" && !head) {
    write_all(fd, response(405, "Method Not Allowed", "text/plain", "only GET and HEAD\n", false), deadline);
    return;
  }
  const std::string path = target.substr(0, target.find('?'));
  if (path != "/metrics") {
    write_all(fd,
              response(404, "Not Found", "text/plain", fmt::format("{}: the metrics are at /metrics\n", options_.name),
                       head),
              deadline);
    return;
  }
  std::string body;
  try {
    body = prometheus::TextSerializer().Serialize(metrics_->Collect());
  } catch (const std::exception& e) {
    write_all(fd, response(500, "Internal Server Error", "text/plain", std::string(e.what()) + "\n", head), deadline);
    return;
  }
  write_all(fd, response(200, "OK", kPrometheusText, body, head), deadline);
}

}  // namespace smddp::telemetry
