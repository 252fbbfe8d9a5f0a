// Bootstrap: how ranks find each other before any transport exists. The MPI
// bootstrap uses MPI_COMM_WORLD; a TCP key-value store can stand in later.
// Only the few operations the engine needs at setup time are here.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace smddp {

class Transport;
struct Topology;

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Each rank contributes `bytes`; `out` receives size*bytes in rank order.
  virtual void allgather(const void* in, void* out, size_t bytes) = 0;
  virtual void barrier() = 0;
  // An integer equal on ranks that can share memory, distinct otherwise.
  virtual int shared_memory_key() = 0;
  // The transport between nodes when no faster one is configured or
  // reachable (MPI point-to-point; the socket transport under the TCP store).
  virtual std::unique_ptr<Transport> make_network_transport() = 0;
  // True when make_network_transport() is the socket transport already:
  // --transport auto has nothing to fall back to.
  virtual bool network_transport_is_socket() const { return false; }
  // The socket transport between nodes (--transport socket), connecting
  // `topo`'s socket_partners() at setup; TransportError when some rank
  // cannot. The default is open_socket_transport()
  // (transports/socket_transport.h).
  virtual std::unique_ptr<Transport> make_socket_network_transport(const Topology& topo);
  // The ranks of this bootstrap with the same `color` (>= 0), as a bootstrap
  // of their own, ordered by `key` (ties by rank). Collective over this
  // bootstrap. The default (the TCP store) throws UsageError.
  virtual std::unique_ptr<Bootstrap> split(int color, int key);
};

std::unique_ptr<Bootstrap> make_mpi_bootstrap();

// Who is where: built once from the bootstrap.
struct Topology {
  int rank = 0;
  int size = 1;
  int node = 0;
  int num_nodes = 1;
  int local_rank = 0;
  int local_size = 1;
  std::vector<std::string> hosts;            // by world rank
  std::vector<int> pids;                     // by world rank
  std::vector<int> node_of;                  // by world rank
  std::vector<std::vector<int>> node_ranks;  // world ranks of each node, ascending

  bool same_node(int peer) const { return node_of[peer] == node; }
  // Ranks on other nodes: the most a rank can talk to over the network.
  int remote_size() const { return size - static_cast<int>(node_ranks[static_cast<size_t>(node)].size()); }
};

// Gathers hosts, pids and nodes. ranks_per_node > 0 splits each real node
// into virtual nodes of that many consecutive ranks.
Topology discover_topology(Bootstrap& bootstrap, int ranks_per_node);

}  // namespace smddp
