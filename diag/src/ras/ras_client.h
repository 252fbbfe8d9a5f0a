// A client of NCCL's RAS service (the ncclras port, NCCL_RAS_ADDR, default
// localhost:28028). The protocol is lines of text: the client says
// "CLIENT PROTOCOL 2", the server "SERVER PROTOCOL <n>"; then "TIMEOUT <s>",
// "SET FORMAT json|text" and "MONITOR" are each answered "OK" (or
// "ERROR: ..."), and "[VERBOSE ]STATUS" is answered with the status, after
// which the server closes the connection. In monitor mode the server writes
// events as they happen. Every wait here has a deadline: a server that
// accepts and never answers costs a TimeoutError naming host:port, never a
// hang; other failures are TransportError (both exit 3 in the tools).
#pragma once

#include <ostream>
#include <string>

#include "smddp/common/socket_io.h"

namespace smddp::diag {

inline constexpr int kRasDefaultPort = 28028;
inline constexpr int kRasProtocol = 2;  // NCCL 2.24 through 2.29 speak 2

struct RasAddress {
  std::string host = "localhost";
  int port = kRasDefaultPort;
  std::string text() const;  // "localhost:28028", "[::1]:28028"
};

// "HOST", "HOST:PORT", "[V6]:PORT"; UsageError "<option> '<text>': ..." otherwise.
RasAddress parse_ras_address(const std::string& text, const std::string& option);

class RasClient {
 public:
  // Connects and exchanges the handshake, each step within `timeout_s`. A
  // server speaking another protocol version costs one warning line on
  // `warnings` (NCCL's own client goes on too); one that answers something
  // else is a TransportError.
  RasClient(const RasAddress& address, double timeout_s, std::ostream& warnings);

  // Sends `line` (a newline added).
  void send(const std::string& line, double timeout_s);
  // Sends `line` and returns the one-line answer (without the newline).
  std::string command(const std::string& line, double timeout_s);
  // Sends `line` and expects "OK"; throws TransportError with the answer otherwise.
  void expect_ok(const std::string& line, double timeout_s);
  // Everything the server writes until it closes the connection (the
  // status answer), at most `max_bytes`.
  std::string read_to_close(double timeout_s, size_t max_bytes);

  enum class Read { Data, Timeout, Closed };
  // Waits at most `timeout_s` for bytes (monitor mode) and appends them.
  Read read_some(double timeout_s, std::string* out);

  const RasAddress& address() const { return address_; }

 private:
  std::string read_line(double timeout_s);
  [[noreturn]] void fail_io(const std::string& doing, net::Io io, int err);

  RasAddress address_;
  net::Fd fd_;
  std::string pending_;  // bytes read past the last line
};

}  // namespace smddp::diag
