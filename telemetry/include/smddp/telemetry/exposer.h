// Serving a prometheus::Registry over HTTP (GET /metrics), for smddp-bench and
// the smddp-diag exporter. prometheus-cpp's Exposer throws civetweb's bare
// "null context" exception when it cannot listen; serve_registry checks its
// arguments first and turns any failure into a one-line smddp::UsageError
// that names the address and the reason (e.g. "Address already in use").
#pragma once

#include <memory>
#include <string>

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

namespace smddp::telemetry {

// Listens on bind:port and serves `registry` at /metrics.
//   bind: an IPv4 or IPv6 literal ("127.0.0.1", "0.0.0.0", "::1", "[::1]").
//   port: 1..65535, or 0 for a free port chosen by the kernel (see listening_port).
// The Exposer holds only a weak reference: keep `registry` alive as long as the
// returned Exposer. Destroying the Exposer stops the server.
// Throws smddp::UsageError (one line, no trailing newline) on a bad address or
// port, or when the port cannot be bound (in use, permission denied).
std::unique_ptr<prometheus::Exposer> serve_registry(const std::string& bind, int port,
                                                    std::shared_ptr<prometheus::Registry> registry);

// The same for any Collectable (a Registry is one; smddp-bench serves a
// Registry plus custom summaries).
std::unique_ptr<prometheus::Exposer> serve_collectable(const std::string& bind, int port,
                                                       std::shared_ptr<prometheus::Collectable> collectable);

// The port the Exposer actually listens on (useful after asking for port 0).
int listening_port(const prometheus::Exposer& exposer);

// "127.0.0.1:9400" or "[::1]:9400": the form for URLs and log lines.
std::string host_port(const std::string& bind, int port);

}  // namespace smddp::telemetry
