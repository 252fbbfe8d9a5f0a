// The /metrics server (smddp/telemetry/http_server.h) that smddp-bench and
// the smddp-diag exporter serve through: the addresses it binds (IPv4, IPv6,
// host names), what it answers, and its bounds: idle connections, request
// size, accept() failing with EMFILE, shutdown. Loopback only, free ports.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "listeners.h"
#include "smddp/error.h"
#include "smddp/telemetry/http_server.h"

namespace smddp::telemetry {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<prometheus::Registry> registry_with_gauge() {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildGauge().Name("smddp_test_value").Help("A test gauge").Register(*registry).Add({{"k", "v"}}).Set(42);
  return registry;
}

// "[::1]:9466" -> "::1", "127.0.0.1:9466" -> "127.0.0.1".
std::string address_of(const MetricsServer& server) {
  std::string host = server.host_port().substr(0, server.host_port().rfind(':'));
  if (!host.empty() && host.front() == '[') host = host.substr(1, host.size() - 2);
  return host;
}

// Polls `done` until it holds; false after 20 s (a hang, not a slow machine).
bool eventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// Whether the peer closed fd (EOF or reset), waiting at most timeout_ms.
bool closed_by_peer(int fd, int timeout_ms) {
  if (!testing::readable(fd, timeout_ms)) return false;
  char c;
  return ::recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

std::string body_of(const std::string& response) {
  const auto end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

TEST(MetricsServer, ServesIpv4Ipv6AndHostNames) {
  auto registry = registry_with_gauge();
  for (const std::string bind : {"127.0.0.1", "::1", "[::1]", "localhost"}) {
    SCOPED_TRACE(bind);
    if (bind.find(':') != std::string::npos && !testing::ipv6_loopback()) continue;
    MetricsServer server(bind, 0, registry);
    ASSERT_GT(server.port(), 0);
    const std::string host = address_of(server);
    if (bind != "localhost") {
      EXPECT_EQ(host, bind == "127.0.0.1" ? "127.0.0.1" : "::1");
    }
    EXPECT_EQ(server.url(), "http://" + server.host_port() + "/metrics");
    const std::string response = testing::http_get(server.port(), "/metrics", host);
    EXPECT_EQ(response.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << response;
    EXPECT_NE(response.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"), std::string::npos);
    EXPECT_NE(body_of(response).find("smddp_test_value{k=\"v\"} 42"), std::string::npos) << response;
  }
}

TEST(MetricsServer, AnswersOnlyGetAndHeadOfMetrics) {
  MetricsServerOptions options;
  options.name = "smddp-test";
  MetricsServer server("127.0.0.1", 0, registry_with_gauge(), options);
  const int port = server.port();
  auto ask = [&](const std::string& request) { return testing::http_request("127.0.0.1", port, request); };

  const std::string query = ask("GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n");
  EXPECT_EQ(query.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << query;
  const std::string head = ask("HEAD /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(head.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << head;
  EXPECT_NE(head.find("Content-Length: " + std::to_string(body_of(query).size()) + "\r\n"), std::string::npos) << head;
  EXPECT_EQ(body_of(head), "");
  const std::string root = ask("GET / HTTP/1.0\r\n\r\n");
  EXPECT_EQ(root.rfind("HTTP/1.0 404 Not Found\r\n", 0), 0u) << root;
  EXPECT_EQ(body_of(root), "smddp-test: the metrics are at /metrics\n");
  EXPECT_EQ(ask("POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n").rfind("HTTP/1.0 405 ", 0), 0u);
  EXPECT_EQ(ask("nonsense\n\n").rfind("HTTP/1.0 400 ", 0), 0u);
  // Over the cap without an end of headers: refused, not read on.
  EXPECT_EQ(ask("GET /metrics HTTP/1.0\r\nX: " + std::string(9000, 'a')).rfind("HTTP/1.0 431 ", 0), 0u);
  EXPECT_EQ(ask("GET /metrics HTTP/1.0\r\nX: " + std::string(9000, 'a') + "\r\n\r\n").rfind("HTTP/1.0 431 ", 0), 0u);
}

TEST(MetricsServer, PortInUseIsOneLineUsageError) {
  auto registry = registry_with_gauge();
  testing::TcpListener occupant;
  try {
    MetricsServer server("127.0.0.1", occupant.port(), registry);
    FAIL() << "bound a port that is in use";
  } catch (const smddp::UsageError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message, "cannot serve /metrics on 127.0.0.1:" + std::to_string(occupant.port()) +
                           ": Address already in use");
  }
  if (!testing::ipv6_loopback()) return;
  MetricsServer first("::1", 0, registry);
  try {
    MetricsServer second("[::1]", first.port(), registry);
    FAIL() << "bound [::1]:" << first.port() << " twice";
  } catch (const smddp::UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot serve /metrics on [::1]:" + std::to_string(first.port()) + ": Address already in use");
  }
}

TEST(MetricsServer, BadAddressesAndPortsAreUsageErrors) {
  auto registry = registry_with_gauge();
  for (const std::string bind : {"", "300.1.1.1", "1.2.3.4:80", "[::1", "[127.0.0.1]", "::1:x", "no such host"}) {
    try {
      MetricsServer server(bind, 0, registry);
      ADD_FAILURE() << "served on '" << bind << "'";
    } catch (const smddp::UsageError& e) {
      EXPECT_EQ(std::string(e.what()), "cannot serve /metrics: bind address '" + bind +
                                           "' is not an IPv4 or IPv6 address or a host name");
    }
  }
  try {
    MetricsServer server("no-such-host.invalid", 0, registry);
    ADD_FAILURE() << "served on an unresolvable name";
  } catch (const smddp::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("bind address 'no-such-host.invalid' does not resolve: "), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(MetricsServer("127.0.0.1", 65536, registry), smddp::UsageError);
  EXPECT_THROW(MetricsServer("127.0.0.1", -1, registry), smddp::UsageError);
  EXPECT_THROW(MetricsServer("127.0.0.1", 0, nullptr), smddp::UsageError);
}

// Idle connections (no request yet) wait without a worker, and at most
// max_pending of them: each one more closes the oldest. A fresh request is
// still answered at once by the one worker.
TEST(MetricsServer, IdleConnectionsAreBoundedAndAFreshRequestIsServed) {
  MetricsServerOptions options;
  options.workers = 1;
  options.max_pending = 4;
  options.connection_timeout = 120s;  // none expires during the test
  MetricsServer server("127.0.0.1", 0, registry_with_gauge(), options);
  constexpr size_t kIdle = 40;
  std::vector<int> idle;
  for (size_t i = 0; i < kIdle; ++i) {
    idle.push_back(testing::connect_to("127.0.0.1", server.port()));
    ASSERT_GE(idle.back(), 0);
  }
  ASSERT_TRUE(eventually([&] { return server.counters().accepted == kIdle; })) << server.counters().accepted;
  auto counters = server.counters();
  EXPECT_EQ(counters.pending_high_water, options.max_pending);
  EXPECT_EQ(counters.dropped, kIdle - options.max_pending);
  EXPECT_EQ(counters.served, 0u) << "an idle connection reached the worker";
  // The oldest were closed, the newest still wait.
  for (size_t i = 0; i < kIdle - options.max_pending; ++i) EXPECT_TRUE(closed_by_peer(idle[i], testing::kWaitMs)) << i;
  for (size_t i = kIdle - options.max_pending; i < kIdle; ++i) EXPECT_FALSE(closed_by_peer(idle[i], 0)) << i;

  const std::string response = testing::http_get(server.port(), "/metrics");
  EXPECT_EQ(response.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << response;
  counters = server.counters();
  EXPECT_EQ(counters.pending_high_water, options.max_pending);
  EXPECT_EQ(counters.dropped, kIdle - options.max_pending + 1);  // the fresh one took the oldest's place
  // Counted once the worker has closed the connection, after the client saw it close.
  EXPECT_TRUE(eventually([&] { return server.counters().served == 1; })) << server.counters().served;
  EXPECT_TRUE(closed_by_peer(idle[kIdle - options.max_pending], testing::kWaitMs));
  for (int fd : idle) ::close(fd);
}

// An idle connection past its deadline is closed without a worker; a
// request that stops half-way is closed by its worker at the deadline.
TEST(MetricsServer, ConnectionsEndAtTheirDeadline) {
  MetricsServerOptions options;
  options.workers = 1;
  options.connection_timeout = 200ms;
  MetricsServer server("127.0.0.1", 0, registry_with_gauge(), options);
  const int idle = testing::connect_to("127.0.0.1", server.port());
  const int partial = testing::connect_to("127.0.0.1", server.port());
  ASSERT_GE(idle, 0);
  ASSERT_GE(partial, 0);
  ::send(partial, "GET /metr", 9, MSG_NOSIGNAL);
  EXPECT_TRUE(closed_by_peer(idle, 20000));
  EXPECT_TRUE(closed_by_peer(partial, 20000));
  EXPECT_TRUE(eventually([&] { return server.counters().expired == 1 && server.counters().served == 1; }));
  EXPECT_EQ(testing::http_get(server.port(), "/metrics").rfind("HTTP/1.0 200 OK\r\n", 0), 0u);
  ::close(idle);
  ::close(partial);
}

// Lowers RLIMIT_NOFILE and takes every descriptor left under it; restores
// both however the test ends (the limit is the whole process's).
class DescriptorsExhausted {
 public:
  DescriptorsExhausted() {
    getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit low = saved_;
    low.rlim_cur = std::min<rlim_t>(saved_.rlim_cur, 1024);
    setrlimit(RLIMIT_NOFILE, &low);
    for (;;) {
      const int fd = ::dup(STDERR_FILENO);
      if (fd < 0) {
        exhausted_ = errno == EMFILE;
        break;
      }
      taken_.push_back(fd);
    }
  }
  ~DescriptorsExhausted() {
    for (int fd : taken_) ::close(fd);
    setrlimit(RLIMIT_NOFILE, &saved_);
  }
  bool exhausted() const { return exhausted_; }

 private:
  rlimit saved_{};
  std::vector<int> taken_;
  bool exhausted_ = false;
};

// With no descriptor left, accept() fails (EMFILE) while the listening
// socket stays readable. The server must pause accept_backoff between tries
// instead of spinning, and serve again once descriptors are back. Counted,
// not timed: in a window of W the tries can be at most W / accept_backoff + 2
// however slow the machine (a spinning loop makes thousands).
TEST(MetricsServer, AcceptUnderEmfileBacksOffInsteadOfSpinning) {
  MetricsServerOptions options;
  options.accept_backoff = 50ms;
  MetricsServer server("127.0.0.1", 0, registry_with_gauge(), options);
  // The client's socket exists before the descriptors run out; connect needs none.
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(client, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(server.port()));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  {
    DescriptorsExhausted exhausted;
    ASSERT_TRUE(exhausted.exhausted());
    ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    ASSERT_TRUE(eventually([&] { return server.counters().accept_calls >= 2; }));  // failing: nothing accepted
    const auto t0 = std::chrono::steady_clock::now();
    const auto before = server.counters();
    std::this_thread::sleep_for(300ms);
    const auto after = server.counters();
    const auto window = std::chrono::steady_clock::now() - t0;
    const uint64_t tries = after.accept_calls - before.accept_calls;
    EXPECT_LE(tries, static_cast<uint64_t>(window / options.accept_backoff) + 2) << "accept() spins under EMFILE";
    EXPECT_EQ(after.accepted, 0u);
    EXPECT_EQ(after.accept_backoffs, after.accept_calls) << "a failed accept without a pause";
  }
  // Descriptors are back: the waiting connection is accepted and answered.
  const std::string response = testing::exchange(client, "GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(response.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << response;
  ::close(client);
}

// Destruction does not wait out the deadlines of idle or half-sent
// connections (120 s here, past the test's time limit) and closes them.
TEST(MetricsServer, StopsAtOnceWithConnectionsOpen) {
  MetricsServerOptions options;
  options.workers = 1;
  options.connection_timeout = 120s;
  auto server = std::make_unique<MetricsServer>("127.0.0.1", 0, registry_with_gauge(), options);
  const int idle = testing::connect_to("127.0.0.1", server->port());
  const int partial = testing::connect_to("127.0.0.1", server->port());
  ASSERT_GE(idle, 0);
  ASSERT_GE(partial, 0);
  ::send(partial, "GET /metr", 9, MSG_NOSIGNAL);
  ASSERT_TRUE(eventually([&] { return server->counters().accepted == 2; }));
  server.reset();
  EXPECT_TRUE(closed_by_peer(idle, testing::kWaitMs));
  EXPECT_TRUE(closed_by_peer(partial, testing::kWaitMs));
  ::close(idle);
  ::close(partial);
}

}  // namespace
}  // namespace smddp::telemetry
