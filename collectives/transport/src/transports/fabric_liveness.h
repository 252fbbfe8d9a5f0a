// Is a peer process on another host still there? libfabric cannot always
// say: over tcp, rxm keeps reconnecting to a dead peer (every 2 s, logging
// "Connection refused") and never fails the operations posted for it, so a
// survivor would only learn of the loss at its deadline.
//
// Each rank therefore listens on a small TCP "liveness" port, published with
// its fabric address. Probing a peer is a non-blocking connect() to that
// port: the kernel of a live process's host completes it (the process need
// not even run, so a busy or stopped peer counts as alive), while a dead
// process's host answers with a reset, ECONNREFUSED. No answer (a host or
// link down) proves nothing; the caller's deadline decides then.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <string>
#include <vector>

namespace smddp {

class LivenessProbe {
 public:
  // Listens on an ephemeral port of `ip` (network byte order; INADDR_ANY
  // picks the first non-loopback IPv4 address to publish). Throws
  // TransportError when no socket can be opened.
  explicit LivenessProbe(in_addr_t ip);
  ~LivenessProbe();
  LivenessProbe(const LivenessProbe&) = delete;
  LivenessProbe& operator=(const LivenessProbe&) = delete;

  // Where peers reach this rank's listener.
  const sockaddr_in& address() const { return address_; }
  void set_peers(std::vector<sockaddr_in> peers);

  // Accepts and closes the probes others made of us (keeps the backlog free).
  void serve();
  // Advances the probe of `peer`: returns why the peer is gone, or "" while
  // it is alive or unknown. Starts at most one connect per interval.
  std::string probe(int peer);

 private:
  struct State {
    int fd = -1;
    std::chrono::steady_clock::time_point started{};
  };
  void finish(State& s);

  int listen_fd_ = -1;
  sockaddr_in address_{};
  std::vector<sockaddr_in> peers_;
  std::vector<State> states_;
};

// The IPv4 address in a libfabric address, when it is a sockaddr_in.
in_addr_t ipv4_of_fabric_address(const std::vector<char>& address);

}  // namespace smddp
