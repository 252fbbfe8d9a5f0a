#include "smddp/telemetry/endpoint.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "smddp/common/strings.h"

namespace smddp::telemetry {
namespace {

std::optional<int> parse_port(const std::string& text) {
  int port = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, port);
  if (text.empty() || ec != std::errc() || ptr != end || port < 1 || port > 65535) return std::nullopt;
  return port;
}

bool valid_host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
}

}  // namespace

std::optional<HostPort> parse_host_port(const std::string& text, int default_port) {
  HostPort result{"", default_port};
  std::string port_text;
  bool has_port = false;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos) return std::nullopt;
    result.host = text.substr(1, close - 1);
    const std::string rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      has_port = true;
      port_text = rest.substr(1);
    }
    const bool v6_chars = std::all_of(result.host.begin(), result.host.end(), [](char c) {
      return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
    });
    if (!v6_chars) return std::nullopt;
  } else {
    const auto colon = text.find(':');
    result.host = text.substr(0, colon);
    if (colon != std::string::npos) {
      has_port = true;
      port_text = text.substr(colon + 1);
    }
    if (!std::all_of(result.host.begin(), result.host.end(), valid_host_char)) return std::nullopt;
  }
  if (result.host.empty()) return std::nullopt;
  if (has_port) {
    auto port = parse_port(port_text);
    if (!port) return std::nullopt;
    result.port = *port;
  }
  return result;
}

std::optional<std::pair<std::string, std::string>> split_scheme(const std::string& url) {
  const auto pos = url.find("://");
  if (pos == std::string::npos) return std::nullopt;
  return std::make_pair(common::to_lower(url.substr(0, pos)), url.substr(pos + 3));
}

}  // namespace smddp::telemetry
