// The Communicator: wires bootstrap, topology, transports, the node's shm
// segment and the selector together, validates calls, and runs them.
#include "smddp/communicator.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>

#include "engine.h"
#include "link_probe.h"
#include "test_flip.h"
#include "algorithms/context.h"
#include "algorithms/model_table.h"
#include "algorithms/selector.h"
#include "algorithms/shm_steps.h"
#include "core/check.h"
#include "core/placement.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "smddp/reduce.h"
#include "smddp/traits.h"
#include "bootstrap/bootstrap.h"
#include "transports/cma.h"
#include "transports/fabric_transport.h"
#include "transports/router.h"
#include "transports/shm_segment.h"
#include "transports/shm_transport.h"
#if SMDDP_CUDA_ENABLED
#include "cuda/staged.h"
#endif

namespace smddp {
namespace {

constexpr double kDefaultTimeoutSeconds = 300;

// Every rank's CPU mask, judged per real host (not per virtual node: ranks
// of one host share its cores whatever SMDDP_RANKS_PER_NODE says).
Placement gather_placement(Bootstrap& bootstrap, const Topology& topo) {
  const RankCpus mine = probe_this_rank();
  std::vector<RankCpus> all(static_cast<size_t>(topo.size));
  bootstrap.allgather(&mine, all.data(), sizeof(RankCpus));
  std::vector<int> host_of(static_cast<size_t>(topo.size));
  for (int r = 0; r < topo.size; ++r) {
    host_of[r] = static_cast<int>(std::find(topo.hosts.begin(), topo.hosts.end(), topo.hosts[r]) - topo.hosts.begin());
  }
  return judge_placement(all, host_of, topo.rank);
}

Group make_group(GroupKind kind, std::vector<int> ranks, int world_rank) {
  Group g{kind, std::move(ranks), 0};
  for (int i = 0; i < g.size(); ++i) {
    if (g.ranks[i] == world_rank) g.me = i;
  }
  return g;
}

class EngineCommunicator final : public Communicator {
 public:
  // `job_rank`: this process's rank in the whole job, which internal errors
  // and SMDDP_TEST_FLIP name (a split group's rank is not the one the user
  // knows); -1: this is the whole job's communicator.
  EngineCommunicator(std::unique_ptr<Bootstrap> bootstrap, const CommunicatorOptions& options, int job_rank)
      : bootstrap_(std::move(bootstrap)),
        options_(options),
        topo_(discover_topology(*bootstrap_, options.ranks_per_node > 0
                                                 ? options.ranks_per_node
                                                 : static_cast<int>(config::integer("SMDDP_RANKS_PER_NODE")))) {
    job_rank_ = job_rank < 0 ? topo_.rank : job_rank;
    if (job_rank < 0) detail::set_check_identity(topo_.rank, topo_.hosts[topo_.rank].c_str());
    // Tests only: armed on the process it names; calls are counted from 1, so 0 never fires.
    flip_ = test_flip_from_environment();
    if (flip_ && flip_->rank == job_rank_) flip_call_ = flip_->call;
    placement_ = gather_placement(*bootstrap_, topo_);
    timeout_ = options.timeout_seconds > 0 ? options.timeout_seconds
                                           : config::seconds("SMDDP_TIMEOUT");
    // The segments' setup is collective over every rank: a rank alone on
    // its node takes part whenever another node shares memory (nodes of
    // uneven sizes: a split group, SMDDP_RANKS_PER_NODE not dividing the job).
    bool any_shared = false;
    for (const auto& ranks : topo_.node_ranks) any_shared |= ranks.size() > 1;
    if (any_shared) segment_ = ShmSegment::create_for_node(*bootstrap_, topo_);
    if (segment_) shm_ = make_shm_transport(*segment_, topo_);
    if (topo_.num_nodes > 1) {
      network_ = open_network_transport(*bootstrap_, topo_,
                                        {options.network_transport, options.fabric_provider});
    }
    router_ = std::make_unique<Router>(topo_, shm_.get(), network_.get());
    if (segment_) steps_ = std::make_unique<ShmSteps>(*segment_, *router_, topo_);
    ctx_ = std::make_unique<Context>(*router_, topo_, steps_.get(), selector_);
    ctx_->cma = probe_cma(*bootstrap_, topo_);
    std::vector<int> all(topo_.size);
    for (int r = 0; r < topo_.size; ++r) all[r] = r;
    ctx_->world = make_group(GroupKind::World, all, topo_.rank);
    ctx_->node = make_group(GroupKind::Node, topo_.node_ranks[topo_.node], topo_.rank);
    std::vector<int> cross;
    for (const auto& ranks : topo_.node_ranks) {
      if (topo_.local_rank < static_cast<int>(ranks.size())) cross.push_back(ranks[topo_.local_rank]);
    }
    ctx_->cross = make_group(GroupKind::Cross, cross, topo_.rank);
    // Selection for this job, built once: the model ranks the algorithms
    // across nodes for the transport that opened (algorithms/selector.h).
    job_.hosts = topo_.num_nodes;
    for (const auto& ranks : topo_.node_ranks) job_.ranks_per_host = std::max(job_.ranks_per_host, static_cast<int>(ranks.size()));
    job_.transport = std::string(network_transport());
    job_.dedicated_cores = placement_.cores_to_spare();
    job_.cma = ctx_->cma;
    job_.link = options.network_link;
    ctx_->scope = WaitScope{"setup", Deadline(timeout_), timeout_, 0, placement_.shared_cores()};
    job_.probed = probe_network_link(*ctx_, *bootstrap_, topo_, model_table::wants_link_probe(job_));
    selector_ = Selector::from_environment(job_);
    bootstrap_->barrier();
  }

  int rank() const override { return topo_.rank; }
  int size() const override { return topo_.size; }
  int local_rank() const override { return topo_.local_rank; }
  int local_size() const override { return topo_.local_size; }
  int node() const override { return topo_.node; }
  int num_nodes() const override { return topo_.num_nodes; }
  const std::string& host(int rank) const override { return topo_.hosts.at(rank); }
  const std::string& last_algorithm() const override { return last_algorithm_; }
  uint64_t calls() const override { return sequence_; }
  std::string_view network_transport() const override { return network_ ? network_->name() : "none"; }
  SelectionTable selection() const override { return selector_.table(job_); }
  PlacementInfo placement() const override {
    return {placement_.oversubscribed, placement_.dedicated_cores, placement_.host_ranks, placement_.host_cpus};
  }
  void set_timeout(double seconds) override {
    if (!(seconds > 0)) throw UsageError("timeout must be positive");
    timeout_ = seconds;
  }
  double timeout() const override { return timeout_; }

  std::unique_ptr<Communicator> split(int color, int key) override {
    if (color < 0) throw UsageError("split: colour " + std::to_string(color) + " is negative");
    CommunicatorOptions options = options_;
    options.timeout_seconds = timeout_;
    // Every rank of a group builds its topology, segment and transports from
    // the group's bootstrap alone: the groups connect side by side.
    return std::make_unique<EngineCommunicator>(bootstrap_->split(color, key), options, job_rank_);
  }

  void run(const CollectiveArgs& args, const CallOptions& options) override {
    const std::string_view collective = to_string(args.collective);
    ++sequence_;
    if (broken_) {
      throw TransportError("communicator is unusable after an earlier failure: " + broken_reason_,
                           {std::string(collective), -1, "", sequence_});
    }
    try {
      const Call call = validate(args);
      ctx_->scope = WaitScope{to_string(args.collective), Deadline(timeout_), timeout_, sequence_,
                              placement_.shared_cores()};
      ctx_->tag = (ctx_->tag + 1) & 0x3fffffff;
      last_algorithm_ = std::string(ctx_->run(ctx_->world, call, options.algorithm));
    } catch (UsageError& e) {
      e.stamp_call(std::string(collective), sequence_);
      throw;
    } catch (Error& e) {
      e.stamp_call(std::string(collective), sequence_);
      // Peers may be mid-protocol: no further call can be trusted.
      broken_ = true;
      broken_reason_ = e.what();
      throw;
    }
    if (args.op == ReduceOp::Avg && collective_reduces(args.collective)) finish_average(args);
    if (sequence_ == flip_call_) [[unlikely]] apply_test_flip(*flip_, args, topo_.rank, topo_.size);
  }

 private:
  Call validate(const CollectiveArgs& a) const {
    const int n = topo_.size;
    if (collective_has_root(a.collective) && (a.root < 0 || a.root >= n)) {
      throw UsageError("root " + std::to_string(a.root) + " is not a rank of this job (0.." +
                       std::to_string(n - 1) + ")");
    }
    const CollectiveTraits& t = traits(a.collective);
    const size_t es = dtype_size(a.dtype);
    if (t.per_peer()) {
      if (!a.send_counts || !a.recv_counts) {
        throw UsageError(std::string(t.name) + ": needs per-peer send and receive counts");
      }
      for (int r = 0; r < n; ++r) {
        if (a.send_counts[r] > std::numeric_limits<size_t>::max() / es / static_cast<size_t>(n) ||
            a.recv_counts[r] > std::numeric_limits<size_t>::max() / es / static_cast<size_t>(n)) {
          throw UsageError(std::string(t.name) + ": a per-peer count overflows the buffer size");
        }
      }
    }
    if (a.count > std::numeric_limits<size_t>::max() / es / static_cast<size_t>(n)) {
      throw UsageError("count " + std::to_string(a.count) + " overflows the buffer size");
    }
    BufferCounts need = buffer_counts(a.collective, a.count, n, a.send_counts, a.recv_counts);
    const int root = t.has_root ? a.root : -1;
    if ((need.send && t.sends_on(topo_.rank, root) && !a.send) ||
        (need.recv && t.receives_on(topo_.rank, root) && !a.recv)) {
      throw UsageError(std::string(t.name) + ": null buffer for " + std::to_string(a.count) + " elements");
    }
    Call c;
    c.collective = a.collective;
    c.send = a.send;
    c.recv = a.recv;
    c.count = t.send == Extent::None ? 0 : a.count;
    c.dtype = a.dtype;
    c.op = a.op == ReduceOp::Avg ? ReduceOp::Sum : a.op;
    c.root = a.root;
    // Block r of an n-block buffer belongs to rank r (patterns::Partition).
    if (t.send == Extent::Ranks || t.recv == Extent::Ranks) c.blocks = patterns::Partition::equal(a.count, n);
    if (t.per_peer()) {
      c.send_counts = a.send_counts;
      c.recv_counts = a.recv_counts;
    }
    // A call without buffers (barrier): host algorithms run it whatever the kind.
    const bool no_buffers = t.send == Extent::None && t.recv == Extent::None;
    c.memory = no_buffers ? MemoryKind::Host : a.memory;
#if !SMDDP_CUDA_ENABLED
    if (c.memory == MemoryKind::Cuda) throw UsageError("device buffers need a build with CUDA (SMDDP_WITH_CUDA)");
#endif
    c.placement = &placement_;
    return c;
  }

  void finish_average(const CollectiveArgs& a) {
    if (!traits(a.collective).receives_on(topo_.rank, a.root)) return;
#if SMDDP_CUDA_ENABLED
    if (a.memory == MemoryKind::Cuda) {
      cuda::divide_on_device(a.recv, a.count, a.dtype, topo_.size);
      return;
    }
#endif
    divide(a.recv, a.count, a.dtype, topo_.size);
  }

  std::unique_ptr<Bootstrap> bootstrap_;
  CommunicatorOptions options_;
  Topology topo_;
  Placement placement_;
  JobShape job_;
  Selector selector_{{}};  // from_environment(job_) once the transport is open
  double timeout_ = kDefaultTimeoutSeconds;
  std::unique_ptr<ShmSegment> segment_;
  std::unique_ptr<Transport> shm_;
  std::unique_ptr<Transport> network_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<ShmSteps> steps_;
  std::unique_ptr<Context> ctx_;
  std::string last_algorithm_;
  uint64_t sequence_ = 0;  // calls so far (ErrorFields::sequence)
  int job_rank_ = 0;
  std::optional<TestFlip> flip_;  // SMDDP_TEST_FLIP
  uint64_t flip_call_ = 0;        // the call to flip after on this rank; 0: none
  bool broken_ = false;
  std::string broken_reason_;
};

}  // namespace

std::unique_ptr<Communicator> make_engine_communicator(std::unique_ptr<Bootstrap> bootstrap,
                                                       const CommunicatorOptions& options) {
  return std::make_unique<EngineCommunicator>(std::move(bootstrap), options, -1);
}

std::unique_ptr<Communicator> Communicator::create_from_mpi(const CommunicatorOptions& options) {
  config::check(config::kEngine);  // before MPI_Init: a bad setting is no one's peer failure
  return make_engine_communicator(make_mpi_bootstrap(), options);
}

BufferCounts buffer_counts(Collective c, size_t count, int nranks, const size_t* send_counts,
                           const size_t* recv_counts) {
  const CollectiveTraits& t = traits(c);
  return {extent_elements(t.send, count, nranks, send_counts), extent_elements(t.recv, count, nranks, recv_counts)};
}

void Communicator::allreduce(const void* s, void* r, size_t n, DataType t, ReduceOp op) {
  run({Collective::AllReduce, s, r, n, t, op, 0});
}
void Communicator::allgather(const void* s, void* r, size_t n, DataType t) {
  run({Collective::AllGather, s, r, n, t, ReduceOp::Sum, 0});
}
void Communicator::reduce_scatter(const void* s, void* r, size_t n, DataType t, ReduceOp op) {
  run({Collective::ReduceScatter, s, r, n, t, op, 0});
}
void Communicator::broadcast(const void* s, void* r, size_t n, DataType t, int root) {
  run({Collective::Broadcast, s, r, n, t, ReduceOp::Sum, root});
}
void Communicator::reduce(const void* s, void* r, size_t n, DataType t, ReduceOp op, int root) {
  run({Collective::Reduce, s, r, n, t, op, root});
}
void Communicator::alltoall(const void* s, void* r, size_t n, DataType t) {
  run({Collective::AllToAll, s, r, n, t, ReduceOp::Sum, 0});
}
void Communicator::gather(const void* s, void* r, size_t n, DataType t, int root) {
  run({Collective::Gather, s, r, n, t, ReduceOp::Sum, root});
}
void Communicator::scatter(const void* s, void* r, size_t n, DataType t, int root) {
  run({Collective::Scatter, s, r, n, t, ReduceOp::Sum, root});
}
void Communicator::sendrecv(const void* s, void* r, size_t n, DataType t) {
  run({Collective::SendRecv, s, r, n, t, ReduceOp::Sum, 0});
}
void Communicator::alltoallv(const void* s, const size_t* sc, void* r, const size_t* rc, DataType t) {
  CollectiveArgs a{Collective::AllToAllV, s, r, 0, t, ReduceOp::Sum, 0};
  a.send_counts = sc;
  a.recv_counts = rc;
  run(a);
}
void Communicator::barrier() { run({Collective::Barrier, nullptr, nullptr, 0, DataType::Uint8, ReduceOp::Sum, 0}); }

}  // namespace smddp
