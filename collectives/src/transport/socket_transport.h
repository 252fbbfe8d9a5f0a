// Point-to-point over plain TCP sockets: the network transport of the TCP
// store bootstrap, where there is no MPI to fall back on (and no libfabric
// provider configured). One connection per pair of ranks, made at setup
// through an address exchange over the bootstrap: the higher rank connects
// to the lower one's listener and names itself. Sockets are non-blocking;
// progress() moves as much of each pair's oldest send and oldest receive as
// the kernel takes, so messages between a pair arrive in posting order. A
// broken connection (EOF, ECONNRESET) makes check_peer() throw
// PeerLostError naming the peer's rank and host.
//
// The listener binds only `listen_address` (never every interface) and
// reads the hellos of all connections side by side, each within a few
// seconds and at its fixed size; a connection that is not a higher rank of
// this job is dropped with one line and the wait goes on. With a secret
// (the TCP store's) each hello is a mutual HMAC challenge-response, so a
// stranger that reaches the port cannot pose as a rank; a rank whose
// secret differs gets a TransportError naming SMDDP_STORE_SECRET.
#pragma once

#include <memory>
#include <string>

#include "transport/bootstrap.h"
#include "transport/transport.h"

namespace smddp {

struct SocketTransportConfig {
  // Numeric address this rank listens on; peers must be able to reach it.
  std::string listen_address;
  // Limit on setting up all connections.
  double setup_timeout_seconds = 60;
  // SMDDP_STORE_SECRET, shared by every rank; empty: hellos prove nothing.
  std::string secret;
};

// Collective over the bootstrap: every rank calls it at the same point.
std::unique_ptr<Transport> make_socket_transport(Bootstrap& bootstrap, const SocketTransportConfig& config);

}  // namespace smddp
