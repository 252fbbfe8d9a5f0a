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

#include "bootstrap/bootstrap.h"
#include "transports/transport.h"

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

// `--transport socket` under a bootstrap with no address of its own (MPI):
// listens on SMDDP_SOCKET_ADDRESS, else first_interface_address(). Peers
// prove SMDDP_STORE_SECRET when it is set, else a secret rank 0 draws for
// this job and hands out through the bootstrap, so only the job's own ranks
// can connect. Fails on every rank, before any listener opens, when a rank
// has no address or too few files for a connection to each other rank.
// Collective over the bootstrap.
std::unique_ptr<Transport> open_socket_transport(Bootstrap& bootstrap);

// The IPv4 address of the first interface that is up, running, not
// loopback and no local bridge (docker*, virbr*), as text; empty when there
// is none.
std::string first_interface_address();

}  // namespace smddp
