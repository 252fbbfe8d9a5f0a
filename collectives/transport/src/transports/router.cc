#include "transports/router.h"

#include <cmath>

#include "core/check.h"
#include "smddp/error.h"

namespace smddp {

Router::Router(const Topology& topo, Transport* local, Transport* network) : topo_(topo) {
  by_peer_.resize(topo.size, nullptr);
  for (int p = 0; p < topo.size; ++p) {
    by_peer_[p] = topo.same_node(p) && local ? local : network;
    if (!topo.same_node(p)) network_ = network;
  }
  if (local) transports_.push_back(local);
  // The network transport is progressed only when a peer needs it.
  if (network && network != local && (network_ || !local)) transports_.push_back(network);
}

void Router::progress_all() {
  for (Transport* t : transports_) t->progress();
}

void Router::wait(std::span<Request> requests, const WaitScope& scope) {
  Backoff backoff(scope.shared_cores);
  size_t finished = 0;
  for (;;) {
    progress_all();
    const Request* pending = nullptr;
    size_t now_finished = 0;
    for (const Request& r : requests) {
      if (r.done) {
        ++now_finished;
      } else if (!pending) {
        pending = &r;
      }
    }
    if (!pending) return;
    // Something arrived: the rest is likely close behind, spin again.
    if (now_finished > finished) {
      finished = now_finished;
      backoff.reset();
    }
    if (backoff.pause()) {
      for (const Request& r : requests) {
        if (!r.done) check_peer(r.peer, scope);
      }
      if (scope.deadline.expired()) {
        timed_out(scope, pending->peer,
                  pending->kind == Request::Kind::Send ? "sending to" : "receiving from");
      }
    }
  }
}

void Router::check_peer(int peer, const WaitScope& scope) {
  try {
    transport_of(peer).check_peer(peer);
  } catch (const PeerLostError& e) {
    throw PeerLostError(std::string(scope.collective) + ": lost peer: " + e.what(),
                        {std::string(scope.collective), peer, topo_.hosts[peer], scope.sequence});
  }
}

void Router::timed_out(const WaitScope& scope, int peer, std::string_view doing) const {
  throw TimeoutError(std::string(scope.collective) + " timed out after " +
                     std::to_string(static_cast<long>(std::lround(scope.timeout_seconds))) +
                     " s " + std::string(doing) + " rank " + std::to_string(peer) + " on " +
                     topo_.hosts[peer],
                     {std::string(scope.collective), peer, topo_.hosts[peer], scope.sequence});
}

}  // namespace smddp
