// HOST[:PORT] parsing shared by the EMF network sinks, the Pushgateway URL
// and smddp-diag's RAS addresses (--ras, ras --address).
#pragma once

#include <optional>
#include <string>

namespace smddp::telemetry {

struct HostPort {
  std::string host;  // brackets removed from an IPv6 literal
  int port = 0;
};

// "host", "host:1234", "[::1]:1234", "[::1]". Returns nullopt for an empty
// host, a port outside 1..65535, junk after the port, or an unbracketed IPv6
// address with a port. A missing port gives default_port.
std::optional<HostPort> parse_host_port(const std::string& text, int default_port);

// Splits "scheme://rest" into scheme (lowercased) and rest; nullopt without "://".
std::optional<std::pair<std::string, std::string>> split_scheme(const std::string& url);

}  // namespace smddp::telemetry
