#include "ras/ras_client.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "smddp/error.h"
#include "shared/text.h"
#include "smddp/telemetry/endpoint.h"

namespace smddp::diag {
namespace {

constexpr size_t kMaxLine = 4096;

std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 80)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out;
}

}  // namespace

std::string RasAddress::text() const {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

RasAddress parse_ras_address(const std::string& text, const std::string& option) {
  auto hp = telemetry::parse_host_port(text, kRasDefaultPort);
  if (!hp) throw UsageError(option + " '" + text + "' is not HOST, HOST:PORT or [IPV6]:PORT (port 1..65535)");
  return RasAddress{hp->host, hp->port};
}

RasClient::RasClient(const RasAddress& address, double timeout_s, std::ostream& warnings) : address_(address) {
  const auto deadline = net::deadline_in(timeout_s);
  std::string why;
  auto endpoints = net::resolve(address.host, address.port, &why);
  if (endpoints.empty()) throw TransportError("cannot resolve " + address.text() + ": " + why);
  int err = 0;
  for (const auto& ep : endpoints) {
    fd_ = net::connect_once(ep, std::max(1, net::ms_left(deadline)), &err);
    if (fd_) break;
  }
  if (!fd_) {
    if (err == ETIMEDOUT) throw TimeoutError("cannot connect to " + address.text() + ": no answer within " + std::to_string(timeout_s) + " s");
    throw TransportError("cannot connect to " + address.text() + ": " + net::errno_text(err) +
                         " (is an NCCL job with RAS running there? NCCL_RAS_ADDR sets its address)");
  }
  send("CLIENT PROTOCOL " + std::to_string(kRasProtocol), timeout_s);
  const std::string answer = read_line(timeout_s);
  const std::string prefix = "SERVER PROTOCOL ";
  if (answer.size() <= prefix.size() || common::to_upper(answer.substr(0, prefix.size())) != prefix) {
    throw TransportError(address.text() + " is not an NCCL RAS service: it answered '" + printable(answer) + "' to the handshake");
  }
  const std::string version = answer.substr(prefix.size());
  auto v = parse_int(version);
  if (!v) throw TransportError(address.text() + " answered the handshake with protocol '" + printable(version) + "', not a number");
  if (*v != kRasProtocol) {
    warnings << "smddp-diag ras: warning: " << address.text() << " speaks RAS protocol " << *v << ", this client "
             << kRasProtocol << "; going on" << std::endl;
  }
}

void RasClient::fail_io(const std::string& doing, net::Io io, int err) {
  if (io == net::Io::Timeout) throw TimeoutError(address_.text() + ": no answer " + doing);
  if (io == net::Io::Closed) throw TransportError(address_.text() + " closed the connection " + doing);
  throw TransportError(address_.text() + ": " + net::errno_text(err) + " " + doing);
}

void RasClient::send(const std::string& line, double timeout_s) {
  const std::string data = line + "\n";
  int err = 0;
  const auto io = net::send_all(fd_.get(), data.data(), data.size(), net::deadline_in(timeout_s), &err);
  if (io != net::Io::Ok) fail_io("when sent '" + line + "'", io, err);
}

std::string RasClient::read_line(double timeout_s) {
  const auto deadline = net::deadline_in(timeout_s);
  for (;;) {
    const size_t nl = pending_.find('\n');
    if (nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return line;
    }
    if (pending_.size() > kMaxLine) throw TransportError(address_.text() + " sent a line longer than 4 KiB");
    const double left = net::ms_left(deadline) / 1000.0;
    std::string more;
    const Read r = left > 0 ? read_some(left, &more) : Read::Timeout;
    if (r == Read::Timeout) throw TimeoutError(address_.text() + ": no answer within " + std::to_string(static_cast<int>(timeout_s + 0.5)) + " s");
    if (r == Read::Closed) throw TransportError(address_.text() + " closed the connection without an answer");
    pending_ += more;
  }
}

std::string RasClient::command(const std::string& line, double timeout_s) {
  send(line, timeout_s);
  return read_line(timeout_s);
}

void RasClient::expect_ok(const std::string& line, double timeout_s) {
  const std::string answer = command(line, timeout_s);
  if (common::to_upper(answer) != "OK") {
    throw TransportError(address_.text() + " answered '" + printable(answer) + "' to '" + line + "'");
  }
}

std::string RasClient::read_to_close(double timeout_s, size_t max_bytes) {
  const auto deadline = net::deadline_in(timeout_s);
  std::string out = std::move(pending_);
  pending_.clear();
  for (;;) {
    if (out.size() > max_bytes) throw TransportError(address_.text() + " sent more than " + std::to_string(max_bytes >> 20) + " MiB");
    const double left = net::ms_left(deadline) / 1000.0;
    const Read r = left > 0 ? read_some(left, &out) : Read::Timeout;
    if (r == Read::Closed) return out;
    if (r == Read::Timeout) {
      throw TimeoutError(address_.text() + ": the status did not end within " + std::to_string(static_cast<int>(timeout_s + 0.5)) + " s");
    }
  }
}

RasClient::Read RasClient::read_some(double timeout_s, std::string* out) {
  if (!pending_.empty()) {
    out->append(pending_);
    pending_.clear();
    return Read::Data;
  }
  const auto deadline = net::deadline_in(timeout_s);
  for (;;) {
    pollfd p{fd_.get(), POLLIN, 0};
    const int n = ::poll(&p, 1, net::ms_left(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_io("while waiting", net::Io::Error, errno);
    if (n == 0) return Read::Timeout;
    char buf[1 << 16];
    const ssize_t got = ::recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (got > 0) {
      out->append(buf, static_cast<size_t>(got));
      return Read::Data;
    }
    if (got == 0 || errno == ECONNRESET) return Read::Closed;
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    fail_io("while reading", net::Io::Error, errno);
  }
}

}  // namespace smddp::diag
