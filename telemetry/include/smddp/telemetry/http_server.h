// THE /metrics server of smddp-bench (--prom-port) and the smddp-diag
// exporter: a small HTTP/1.0 server that serves one prometheus::Collectable
// in the Prometheus text format, on IPv4 and IPv6. It replaces
// prometheus-cpp's Exposer, whose civetweb Debian builds without IPv6 and
// which adds a summary of its own whose quantiles read NaN until the first
// scrape is over; here the body is exactly the collectable, serialised by
// prometheus::TextSerializer.
//
// Served: GET or HEAD /metrics (200), any other path 404, any other method
// 405, a request over the size cap 431. Every response closes the connection.
//
// Bounded against slow, idle or hostile clients:
//   - one thread accepts and watches the accepted connections until their
//     request arrives; only then does one of a few workers take it, so an
//     idle connection never holds a worker;
//   - at most max_pending accepted connections wait (for their request or
//     for a worker): beyond that the OLDEST waiting one is closed unanswered,
//     so a flood of idle connections cannot keep a fresh scrape out;
//   - each connection has a deadline counted from its accept (request read
//     and response written within it) and a cap on the request's size;
//   - accept() failing for lack of descriptors or memory (EMFILE, ENFILE,
//     ENOBUFS, ENOMEM, or any error not about that one connection) pauses
//     accepting for accept_backoff instead of spinning on the listening
//     socket, which stays readable.
// The destructor stops every thread at once (an eventfd wakes every poll).
#pragma once

#include <prometheus/collectable.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace smddp::telemetry {

struct MetricsServerOptions {
  std::string name = "smddp";  // who answers, in the 404 body ("smddp-bench", "smddp-diag exporter")
  int workers = 4;
  size_t max_pending = 128;  // accepted connections waiting, for their request or for a worker
  size_t max_request_bytes = 8192;
  std::chrono::milliseconds connection_timeout{5000};  // from accept to the response written
  std::chrono::milliseconds accept_backoff{100};       // pause after accept fails for lack of resources
};

class MetricsServer {
 public:
  // bind: an IPv4 or IPv6 literal ("0.0.0.0", "127.0.0.1", "::", "::1",
  // "[::1]") or a host name, resolved; the first of its addresses that binds
  // is used. "::" serves IPv4 clients too (IPV6_V6ONLY off), as 0.0.0.0 does
  // for IPv4; any other IPv6 address is IPv6 only. port 0: a free one.
  // Throws smddp::UsageError, one line: a bad or unresolvable address, a port
  // outside 0..65535, or a bind that fails ("cannot serve /metrics on
  // [::1]:9466: Address already in use").
  MetricsServer(const std::string& bind, int port, std::shared_ptr<prometheus::Collectable> metrics,
                MetricsServerOptions options = {});
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const { return port_; }
  std::string host_port() const;  // "127.0.0.1:9466", "[::1]:9466": the address bound
  std::string url() const;        // http://HOST:PORT/metrics

  // What the server did so far; for the tests (bounded queue, accept back-off).
  struct Counters {
    uint64_t accept_calls = 0;   // accept4() calls, failed ones included
    uint64_t accepted = 0;
    uint64_t accept_backoffs = 0;  // accept failures (EMFILE, ...) followed by a pause
    uint64_t dropped = 0;          // waiting connections closed unanswered (too many waiting)
    uint64_t expired = 0;          // closed without a request by their deadline
    uint64_t served = 0;           // connections a worker finished, answered or not
    size_t pending_high_water = 0;
  };
  Counters counters() const;

 private:
  void accept_loop();
  void accept_one(std::chrono::steady_clock::time_point& paused_until);
  void worker();
  void serve(int fd, std::chrono::steady_clock::time_point deadline);
  bool wait_for(int fd, short events, std::chrono::steady_clock::time_point deadline) const;
  void write_all(int fd, const std::string& data, std::chrono::steady_clock::time_point deadline) const;

  struct Pending {
    int fd;
    std::chrono::steady_clock::time_point deadline;
  };

  MetricsServerOptions options_;
  std::shared_ptr<prometheus::Collectable> metrics_;
  std::string address_;  // numeric, no brackets
  bool v6_ = false;
  int fd_ = -1;
  int wake_fd_ = -1;  // eventfd: readable once the server stops
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Pending> idle_;   // accept_loop's own: accepted, no request yet
  std::deque<Pending> ready_queue_;  // under mutex_: a request arrived, for the workers
  Counters counters_;  // under mutex_
  std::vector<std::thread> threads_;
};

}  // namespace smddp::telemetry
