// The hang report's out-of-band channel between hosts: while the ranks are
// stuck in a collective, each host's first rank sends its host's progress
// records to rank 0 over a TCP connection of its own, outside the engine and
// MPI. Opened at attach time, over the bootstrap:
//   - rank 0 listens on SMDDP_STORE_BIND_ADDR when set, else on each of its
//     non-loopback addresses (port chosen by the kernel); it broadcasts those
//     endpoints and a fresh random secret;
//   - every other host's first rank connects to each endpoint in turn and
//     keeps the first that answers; rank 0 closes the listeners nobody
//     reached (so it listens only where other hosts reach it).
// A report: rank 0 sends a random nonce on accept; the host replies with
// its host name, its records and
//   HMAC-SHA256(secret, "smddp-hang-report" | nonce | host | records),
// every field length-framed (common/'s AuthFrame), so a stranger reaching
// the port can neither pose as a host nor replay an old report, and no
// bytes move between the host name and the records unnoticed. Every step
// is bounded in time; no thread, and only rank 0's listening sockets live
// between reports (closed at exit).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "smddp/communicator.h"

namespace smddp::bench {

// A report's bytes after rank 0's nonce (here for the tests):
//   u32 host length | u32 records length (big-endian) | host | records | MAC
namespace hang_wire {

inline constexpr size_t kHeadBytes = 8;
inline constexpr uint32_t kMaxHost = 1024;        // a host name
inline constexpr uint32_t kMaxRecords = 4u << 20;  // one host's records, as JSON

// The bytes that follow a head (host, records and MAC); 0 when the head
// announces an empty host or a length past the limits.
size_t body_bytes(std::string_view head);
// The whole message; "" when host or records are out of bounds.
std::string seal(const std::string& secret, const std::string& nonce, const std::string& host,
                 const std::string& records);
// Head and body of a message: false unless their lengths agree and the MAC
// is the one `secret` gives for `nonce`; then `host` and `records` are its fields.
bool open(const std::string& secret, const std::string& nonce, std::string_view message, std::string& host,
          std::string& records);

}  // namespace hang_wire

class HangChannel {
 public:
  HangChannel() = default;
  ~HangChannel();
  HangChannel(const HangChannel&) = delete;
  HangChannel& operator=(const HangChannel&) = delete;

  // Collective over `comm`. Off for a job on one host, and for a host that
  // reaches none of rank 0's endpoints (rank 0 says which, once).
  void open(Communicator& comm, const std::vector<std::string>& hosts);
  bool sends() const { return !target_.empty(); }  // a host's first rank, not on rank 0's host
  bool receives() const { return !listeners_.empty(); }

  // A host's first rank: sends `records` within `seconds`. False when rank 0
  // did not take them (gone, not reporting within the time, unreachable).
  bool send(const std::string& host, const std::string& records, double seconds) const;
  // Rank 0: the records of the hosts in `expected`, as each sent them, taken
  // until all have answered or `seconds` have passed.
  std::map<std::string, std::string> collect(const std::set<std::string>& expected, double seconds);

 private:
  std::vector<int> listeners_;  // rank 0
  std::string target_;          // others: "ADDRESS|PORT" of rank 0's listener
  std::string secret_;
  std::mutex mutex_;            // the watchdog thread and the main one may both report
};

}  // namespace smddp::bench
