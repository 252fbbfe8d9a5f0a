// Point-to-point over plain TCP sockets: the network transport of the TCP
// store bootstrap, `--transport socket`, and `--transport auto` between
// nodes without EFA. Every rank listens on one address and publishes it
// over the bootstrap; a pair of ranks gets a connection only when one of
// them first posts a message to the other (never node-mates: the router
// sends those through shared memory), so a rank holds about as many
// descriptors as its schedules have network peers, not one per rank. The
// higher rank of a pair always connects, the lower one accepts
// (socket_handshake.h), so two ranks wanting each other at once cannot
// race. The partners the default algorithms use (socket_partners()) are
// connected at setup, within a deadline, and every rank votes over the
// bootstrap: either all ranks get the transport or all learn the same
// failure, naming the rank, the peer and their hosts.
//
// Sockets are non-blocking; progress() moves as much of each pair's oldest
// send and oldest receive as the kernel takes, so messages between a pair
// arrive in posting order. A broken connection (EOF, ECONNRESET), or a
// peer whose listener refuses a new connection, makes check_peer() throw
// PeerLostError naming the peer's rank and host. A connection that cannot
// be made (no answer, unreachable) within the connect timeout is a
// TransportError naming the peer, its host and address.
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
#include <vector>

#include "bootstrap/bootstrap.h"
#include "transports/transport.h"

namespace smddp {

struct SocketTransportConfig {
  // Numeric address this rank listens on; peers must be able to reach it.
  std::string listen_address;
  // Limit on reaching a peer's listener once a connection is wanted.
  double connect_timeout_seconds = 60;
  // SMDDP_STORE_SECRET, shared by every rank; empty: hellos prove nothing.
  std::string secret;
  // Peers connected at setup, before the vote. Symmetric over the job (p
  // lists q exactly when q lists p), as socket_partners() is.
  std::vector<int> partners;
  // Limit on connecting the partners.
  double setup_timeout_seconds = 60;
};

// Either a transport on every rank, or on every rank the same failure: the
// lowest failing rank's, naming it, its host and the peer it could not
// reach (or the address it could not listen on).
struct SocketOpening {
  std::unique_ptr<Transport> transport;
  std::string failure;
};

// Collective over the bootstrap: every rank calls it at the same point.
SocketOpening try_make_socket_transport(Bootstrap& bootstrap, const SocketTransportConfig& config);
// The same; a failure is a TransportError.
std::unique_ptr<Transport> make_socket_transport(Bootstrap& bootstrap, const SocketTransportConfig& config);

// The peers this rank's default schedules use across nodes: in its cross
// group (the ranks of its local rank, one per node), those 2^k positions
// away either way (ring neighbours at k = 0, the recursive-doubling and
// halving-doubling partners). Symmetric; never a node-mate.
std::vector<int> socket_partners(const Topology& topo);

// The socket transport under a bootstrap with no address of its own (MPI):
// listens on SMDDP_SOCKET_ADDRESS, else first_interface_address(). Peers
// prove SMDDP_STORE_SECRET when it is set, else a secret rank 0 draws for
// this job and hands out through the bootstrap, so only the job's own ranks
// can connect. Fails on every rank, before any listener opens, when a rank
// has no address or too few files for a connection to each partner (the
// soft limit is raised toward `remote_ranks`, the most it could ever
// connect to). Connections on demand get SMDDP_BOOTSTRAP_TIMEOUT.
// Collective over the bootstrap.
SocketOpening try_open_socket_transport(Bootstrap& bootstrap, const std::vector<int>& partners, int remote_ranks,
                                        double setup_timeout_seconds);
// `--transport socket`: the partners get SMDDP_BOOTSTRAP_TIMEOUT and a
// failure is a TransportError.
std::unique_ptr<Transport> open_socket_transport(Bootstrap& bootstrap, const std::vector<int>& partners,
                                                 int remote_ranks);

// The IPv4 address of the first interface that is up, running, not
// loopback and no local bridge (docker*, virbr*), as text; empty when there
// is none.
std::string first_interface_address();

}  // namespace smddp
