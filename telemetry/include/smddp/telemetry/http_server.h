// The exporter's /metrics endpoint: a small HTTP/1.0 server of its own, on
// an IPv4 address or an IPv6 literal. Debian's civetweb (behind
// prometheus-cpp's Exposer) is built without IPv6, and the Exposer adds its
// own summary whose quantiles read NaN until the first scrape is over; here
// the body is exactly the registry, serialised by prometheus-cpp.
//
// Requests are bounded (8 KiB of headers, 5 s per connection) and served by
// a few threads, so a slow or hostile client cannot stall the others for long.
#pragma once

#include <prometheus/collectable.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace smddp::telemetry {

class MetricsServer {
 public:
  // bind: "0.0.0.0", "127.0.0.1", "::", "::1", "[::1]"; port 0: a free one.
  // Throws UsageError ("cannot serve /metrics on [::1]:9466: Address already in use").
  MetricsServer(const std::string& bind, int port, std::shared_ptr<prometheus::Collectable> metrics);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const { return port_; }
  std::string url() const;  // http://HOST:PORT/metrics, IPv6 in brackets

 private:
  void accept_loop();
  void worker();
  void serve(int fd);

  std::string address_;
  bool v6_ = false;
  int fd_ = -1;
  int port_ = 0;
  std::shared_ptr<prometheus::Collectable> metrics_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<int> pending_;
  std::vector<std::thread> threads_;
};

}  // namespace smddp::telemetry
