// Pushes a Collectable (a Registry, or smddp-bench's BenchRegistry) to a
// Prometheus Pushgateway, grouped by job and instance:
// PUT <base>/metrics/job/<job>/instance/<instance> replaces the group each
// time, so the gateway always holds the latest complete set. Bounded in time
// (connect 2 s, whole request 5 s) so a dead gateway cannot stall a sweep.
// libcurl directly rather than prometheus::Gateway: Gateway 1.0 sets no
// timeouts and puts job and instance into the path unescaped.
#pragma once

#include <memory>
#include <string>

#include <prometheus/collectable.h>

namespace smddp::telemetry {

class Pushgateway {
 public:
  // Throws smddp::UsageError for a URL that is not http(s)://HOST[:PORT][/PATH]
  // or an empty job.
  Pushgateway(const std::string& url, const std::string& job, const std::string& instance,
              std::shared_ptr<prometheus::Collectable> metrics);
  ~Pushgateway();
  Pushgateway(const Pushgateway&) = delete;
  Pushgateway& operator=(const Pushgateway&) = delete;

  // Throws smddp::Error with the reason (connection refused, HTTP 400: ...).
  void push();
  const std::string& group_url() const { return group_url_; }

 private:
  std::string group_url_;
  std::shared_ptr<prometheus::Collectable> metrics_;
  void* curl_ = nullptr;
};

// A grouping-key path segment "name/value", base64url-encoded as "name@base64/..."
// when value holds anything but [A-Za-z0-9_.-] (the Pushgateway's rule).
std::string grouping_segment(const std::string& name, const std::string& value);

}  // namespace smddp::telemetry
