// Routes each peer to its transport (shm inside the node, the network
// transport across nodes) and waits on requests with a deadline.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/wait.h"
#include "bootstrap/bootstrap.h"
#include "transports/transport.h"

namespace smddp {

// What a wait is for, so a timeout can say which collective and peer.
struct WaitScope {
  std::string_view collective;
  Deadline deadline;
  double timeout_seconds = 0;
  uint64_t sequence = 0;      // the call's number on its communicator (ErrorFields)
  bool shared_cores = false;  // this host's ranks share cores: waits yield early
};

class Router {
 public:
  Router(const Topology& topo, Transport* local, Transport* network);

  void post(Request& r) { transport_of(r.peer).post(r); }
  // Progresses until every request is done; throws TimeoutError naming the
  // first unfinished request's peer, or PeerLostError.
  void wait(std::span<Request> requests, const WaitScope& scope);
  // Throws PeerLostError, naming the collective, when the peer has died
  // (used by other waiting loops too).
  void check_peer(int peer, const WaitScope& scope);
  [[noreturn]] void timed_out(const WaitScope& scope, int peer, std::string_view doing) const;

  // Lets the network transport move messages while a rank waits on
  // something else (shared memory): a send that MPI reported complete may
  // still need its sender's progress to reach the peer.
  void progress_network() {
    if (network_) network_->progress();
  }

  const Topology& topology() const { return topo_; }

 private:
  Transport& transport_of(int peer) { return *by_peer_[peer]; }
  void progress_all();

  const Topology& topo_;
  std::vector<Transport*> by_peer_;
  std::vector<Transport*> transports_;  // distinct ones
  Transport* network_ = nullptr;        // set when some peer is on another node
};

}  // namespace smddp
