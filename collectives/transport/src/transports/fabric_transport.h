// The transport between nodes: libfabric (efa on AWS, tcp elsewhere), plain
// TCP sockets, or MPI point-to-point. open_network_transport() decides, the
// same way on every rank, and opens it.
//
// Selection: `transport` is "mpi", "fabric", "socket" or "auto" (empty: from
// SMDDP_TRANSPORT, else auto). auto means fabric when the efa provider
// exists on every rank; else socket when every rank has an address, files
// for its setup connections, and reaches its partners within
// SMDDP_SOCKET_SETUP_TIMEOUT; else (every rank together, one line on rank
// 0's stderr saying why) mpi. Under the TCP store bootstrap, whose own
// transport is the socket one, auto without EFA is socket. The provider is `provider`, else
// SMDDP_FABRIC_PROVIDER, else FI_PROVIDER, else efa when present, else tcp.
// With "fabric", a rank that cannot open its endpoint makes every rank throw
// TransportError naming that rank, its host and libfabric's message.
//
// Environment knobs for tests: SMDDP_FABRIC_MR=always registers buffers even
// when the provider does not require it; SMDDP_FABRIC_MAX_MSG=N splits
// messages into pieces of at most N bytes (the provider's max_msg_size
// applies anyway).
#pragma once

#include <memory>
#include <string>

#include "bootstrap/bootstrap.h"
#include "transports/transport.h"

namespace smddp {

struct NetworkChoice {
  std::string transport;  // "mpi", "fabric", "socket", "auto" or empty
  std::string provider;   // libfabric provider name or empty
};

// Collective over the bootstrap: every rank must call it.
std::unique_ptr<Transport> open_network_transport(Bootstrap& bootstrap, const Topology& topo,
                                                  const NetworkChoice& choice);

// The libfabric transport over an endpoint whose peers are inserted (rank i
// at fi_addr_t i); messages are split into pieces of at most max_piece bytes.
// `liveness` (peers set) tells a dead peer from a slow one.
struct FabricEndpoint;
class LivenessProbe;
std::unique_ptr<Transport> make_fabric_transport(std::unique_ptr<FabricEndpoint> endpoint,
                                                 std::unique_ptr<LivenessProbe> liveness,
                                                 const Topology& topo, size_t max_piece);

}  // namespace smddp
