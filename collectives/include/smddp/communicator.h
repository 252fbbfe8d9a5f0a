// The public entry point of the engine: a Communicator built from a bootstrap
// (MPI today) that runs collectives on host buffers.
//
// Counts follow NCCL: allreduce/broadcast/reduce take the element count of
// the whole buffer; allgather takes the per-rank send count (recv holds
// size*count); reduce_scatter takes the per-rank receive count (send holds
// size*count); alltoall takes the count exchanged with each peer. In-place
// calls pass the same pointer (for allgather, recv + rank*count; for
// reduce_scatter, send + rank*count, as NCCL defines them). gather and
// scatter follow allgather and reduce_scatter with the big buffer on the
// root; sendrecv sends `count` to rank+1 and receives `count` from rank-1;
// alltoallv sends send_counts[peer] and receives recv_counts[peer] elements,
// packed by peer (no displacements), and ignores `count`. The layout of
// every collective is one row of smddp/traits.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "smddp/types.h"

namespace smddp {

struct CollectiveArgs {
  Collective collective = Collective::AllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  DataType dtype = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;
  int root = 0;
  // Where send and recv live. Cuda: memory of the current CUDA device, ready
  // (the caller's streams synchronised); the selector picks among the
  // algorithms that handle it (cuda_staged) and the call is complete when it
  // returns.
  MemoryKind memory = MemoryKind::Host;
  // alltoallv only: n element counts each, one per peer, in host memory
  // (the buffers may be device memory).
  const size_t* send_counts = nullptr;
  const size_t* recv_counts = nullptr;
};

struct CallOptions {
  // "auto" lets the selector choose; any registered name forces one.
  std::string algorithm = "auto";
};

// Figures of the links between nodes a tool knows (a preflight profile's
// link_bandwidth floor, a measurement): the model's network tier when no
// SMDDP_MODEL_FILE is set (docs/engine.md, "Algorithms and selection").
struct LinkFigures {
  double gbytes_per_s = 0;  // per host link, 1e9 bytes/s; > 0
  double latency_us = 0;    // per message; <= 0: the built-in figure of the transport
  std::string source;       // named in --explain: "profile p4d.24xlarge", ...
};

struct CommunicatorOptions {
  // Seconds a blocking wait may last before TimeoutError. <= 0: from
  // SMDDP_TIMEOUT, else 300.
  double timeout_seconds = 0;
  // Group consecutive ranks into virtual nodes of this many ranks (0: from
  // SMDDP_RANKS_PER_NODE, else the real shared-memory nodes).
  int ranks_per_node = 0;
  // Transport between nodes: "mpi", "fabric" (libfabric), "socket" (plain
  // TCP) or "auto" (from SMDDP_TRANSPORT, else fabric when the efa provider
  // exists, else mpi).
  std::string network_transport = "auto";
  // libfabric provider (empty: SMDDP_FABRIC_PROVIDER, else FI_PROVIDER, else
  // efa when present, else tcp).
  std::string fabric_provider;
  // The cost model's network tier, when no SMDDP_MODEL_FILE is set.
  std::optional<LinkFigures> network_link;
};

// One run of sizes of the selection table a communicator built
// (Communicator::selection(), smddp-bench --list-algorithms --explain).
struct SelectionRange {
  Collective collective = Collective::AllReduce;
  std::string group;  // "world", "cross" (one rank per node, inside hierarchical and sharded), "node"
  size_t min_bytes = 0;
  size_t max_bytes = 0;  // SIZE_MAX: no bound
  std::vector<std::string> candidates;  // in order: the first that accepts a call runs it
  // The model's rows: predicted time of the first two candidates at
  // `at_bytes` (the largest size ranked in the range); < 0: not modelled.
  double predicted_us = -1;
  double runner_up_us = -1;
  size_t at_bytes = 0;
  std::string source;  // "model", "SMDDP_TUNING_FILE PATH", "measured rows (selector.cc)", ...
};

struct SelectionTable {
  std::string parameters;  // where the model's parameters came from; empty: no model
  int hosts = 1, ranks_per_host = 1;  // the job
  int modelled_hosts = 0, modelled_ranks_per_host = 0;  // the topology ranked (at most 16 ranks a host)
  std::string ranked_on;  // at scale: the proxies drawn and the host count their times are carried to
  std::string transport;
  std::vector<std::string> forced;  // SMDDP_ALGORITHM_<COLLECTIVE> settings in force
  std::vector<SelectionRange> ranges;
};

// How the ranks sit on this rank's host, judged once at creation from every
// rank's CPU affinity mask (docs/engine.md, "Placement").
struct PlacementInfo {
  bool oversubscribed = false;   // the host's ranks cannot each have a CPU of their own
  bool dedicated_cores = false;  // this rank has CPUs no other rank of its host has
  int host_ranks = 1;            // ranks of this communicator on the host
  int host_cpus = 0;             // CPUs in the union of their affinity masks
};

class Communicator {
 public:
  // Builds a communicator over MPI_COMM_WORLD. Initialises MPI when the
  // caller has not; collective across all ranks.
  static std::unique_ptr<Communicator> create_from_mpi(const CommunicatorOptions& options = {});
  // Builds a communicator from a torchrun-style environment (RANK,
  // WORLD_SIZE, MASTER_ADDR, MASTER_PORT; LOCAL_RANK, LOCAL_WORLD_SIZE
  // checked when set) through a TCP store on rank 0; no MPI. Joining waits
  // at most SMDDP_BOOTSTRAP_TIMEOUT seconds (default 60). UsageError for a
  // malformed variable or ranks that disagree, TimeoutError when ranks are
  // missing, TransportError when MASTER_ADDR:MASTER_PORT cannot be reached.
  static std::unique_ptr<Communicator> create_from_env(const CommunicatorOptions& options = {});
  // The bootstrap bootstrap_from_environment() names: MPI under mpirun or
  // srun, the TCP store under torchrun-style variables, else MPI (singleton).
  static std::unique_ptr<Communicator> create(const CommunicatorOptions& options = {});

  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  virtual int node() const = 0;
  virtual int num_nodes() const = 0;
  virtual const std::string& host(int rank) const = 0;

  // Runs one collective; throws UsageError for invalid arguments (the same on
  // every rank), TimeoutError / PeerLostError / TransportError at run time.
  virtual void run(const CollectiveArgs& args, const CallOptions& options = {}) = 0;

  // The algorithm that ran the last call.
  virtual const std::string& last_algorithm() const = 0;
  // Calls run so far on this communicator: the number of the last one, as
  // its error messages ("call #N") and SMDDP_TEST_FLIP count them (from 1).
  virtual uint64_t calls() const { return 0; }
  // The placement verdict selection and waiting use.
  virtual PlacementInfo placement() const = 0;
  // The transport between nodes that opened: "mpi", "fabric" or "socket";
  // "none" on a single node.
  virtual std::string_view network_transport() const = 0;
  // The selection table built at creation for host buffers (docs/engine.md).
  virtual SelectionTable selection() const { return {}; }

  virtual void set_timeout(double seconds) = 0;
  virtual double timeout() const = 0;

  // The ranks of this communicator with the same `color` (>= 0), as a
  // communicator of their own (MPI_Comm_split's rule): its ranks are
  // renumbered 0..n-1 by `key`, ties by rank here; hosts, nodes and
  // placement are those of its own ranks; it gets this communicator's
  // options and current timeout. Collective over this communicator; the
  // groups may then run calls at once, each on its own. UsageError for a
  // negative colour, and under the TCP store (create_from_env), which cannot
  // split yet.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

  void allreduce(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op);
  void allgather(const void* send, void* recv, size_t count, DataType dtype);
  void reduce_scatter(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op);
  void broadcast(const void* send, void* recv, size_t count, DataType dtype, int root);
  void reduce(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op, int root);
  void alltoall(const void* send, void* recv, size_t count, DataType dtype);
  void gather(const void* send, void* recv, size_t count, DataType dtype, int root);
  void scatter(const void* send, void* recv, size_t count, DataType dtype, int root);
  void sendrecv(const void* send, void* recv, size_t count, DataType dtype);
  void alltoallv(const void* send, const size_t* send_counts, void* recv, const size_t* recv_counts,
                 DataType dtype);
  void barrier();
};

enum class BootstrapKind { Mpi, TcpStore };
// Which bootstrap Communicator::create() uses in this environment: MPI when
// a launcher set OMPI_COMM_WORLD_RANK, PMIX_RANK or PMI_RANK; the TCP store
// when RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT are all set; MPI
// otherwise. UsageError when only some of WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT are set (a half-configured torchrun environment).
BootstrapKind bootstrap_from_environment();

// Element counts of the send and receive buffers a call needs (the larger
// one of a rooted collective, whatever the rank). alltoallv: the sums of
// the per-peer counts, 0 without them.
struct BufferCounts {
  size_t send = 0;
  size_t recv = 0;
};
BufferCounts buffer_counts(Collective c, size_t count, int nranks, const size_t* send_counts = nullptr,
                           const size_t* recv_counts = nullptr);

}  // namespace smddp
