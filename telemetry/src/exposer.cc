// serve_registry: prometheus-cpp's Exposer with argument checks up front and
// civetweb's failures turned into one-line usage errors.
#include "smddp/telemetry/exposer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CivetServer.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <exception>

#include "smddp/error.h"

namespace smddp::telemetry {
namespace {

// "[::1]" -> "::1"; anything else unchanged.
std::string strip_brackets(const std::string& bind) {
  if (bind.size() >= 2 && bind.front() == '[' && bind.back() == ']') {
    return bind.substr(1, bind.size() - 2);
  }
  return bind;
}

bool is_ipv6_literal(const std::string& address) {
  in6_addr v6{};
  return inet_pton(AF_INET6, address.c_str(), &v6) == 1;
}

bool is_ipv4_literal(const std::string& address) {
  in_addr v4{};
  return inet_pton(AF_INET, address.c_str(), &v4) == 1;
}

// civetweb only says "null context" when it cannot listen. Binding the same
// address ourselves recovers the errno for the message (the race with another
// process is harmless: this is only the explanation of a failure).
std::string bind_failure_reason(const std::string& address, int port) {
  const bool v6 = is_ipv6_literal(address);
  const int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return std::strerror(errno);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc = 0;
  if (v6) {
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET6, address.c_str(), &sa.sin6_addr);
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  } else {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, address.c_str(), &sa.sin_addr);
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  }
  if (rc == 0) rc = ::listen(fd, 1);
  const int saved = errno;
  ::close(fd);
  return rc == 0 ? "the HTTP server failed to start" : std::strerror(saved);
}

// civetweb writes its own errors to stderr; the usage error says it in one line.
int quiet_log(const mg_connection*, const char*) { return 1; }

const CivetCallbacks& quiet_callbacks() {
  static const CivetCallbacks callbacks = [] {
    CivetCallbacks c;
    c.log_message = quiet_log;
    return c;
  }();
  return callbacks;
}

}  // namespace

std::string host_port(const std::string& bind, int port) {
  const std::string address = strip_brackets(bind);
  if (is_ipv6_literal(address)) return fmt::format("[{}]:{}", address, port);
  return fmt::format("{}:{}", address, port);
}

std::unique_ptr<prometheus::Exposer> serve_registry(const std::string& bind, int port,
                                                    std::shared_ptr<prometheus::Registry> registry) {
  return serve_collectable(bind, port, std::move(registry));
}

std::unique_ptr<prometheus::Exposer> serve_collectable(const std::string& bind, int port,
                                                       std::shared_ptr<prometheus::Collectable> registry) {
  const std::string address = strip_brackets(bind);
  if (!is_ipv4_literal(address) && !is_ipv6_literal(address)) {
    throw UsageError(fmt::format("cannot serve /metrics: bind address '{}' is not an IPv4 or IPv6 address",
                                 bind));
  }
  if (port < 0 || port > 65535) {
    throw UsageError(fmt::format("cannot serve /metrics: port {} is outside 0..65535", port));
  }
  if (!registry) throw UsageError("cannot serve /metrics: no registry");
  const std::string listen = host_port(address, port);
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", listen, "num_threads", "2"}, &quiet_callbacks());
  } catch (const std::exception&) {
    throw UsageError(fmt::format("cannot serve /metrics on {}: {}", listen, bind_failure_reason(address, port)));
  }
  exposer->RegisterCollectable(registry);
  return exposer;
}

int listening_port(const prometheus::Exposer& exposer) {
  const auto ports = exposer.GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

}  // namespace smddp::telemetry
