#include "algorithms/registry.h"

#include <vector>

#include "algorithms/catalog.h"
#include "algorithms/shm_steps.h"
#include "core/placement.h"
#include "smddp/traits.h"

namespace smddp {

CallShape shape_of(const Context& ctx, const Group& g, const Call& call) {
  CallShape s;
  s.collective = call.collective;
  s.group = g.kind;
  s.group_size = g.size();
  s.nodes = ctx.topo.num_nodes;
  s.ranks_per_node = ctx.steps ? ctx.steps->size() : 1;
  s.uniform_nodes = ctx.uniform_nodes;
  s.bytes = call.bytes(g.size());
  s.memory = call.memory;
  s.dedicated_cores = call.placement ? call.placement->cores_to_spare() : true;
  s.cma = ctx.cma;
  s.call = &call;
  s.live_group = &g;
  return s;
}

const char* accepts_any(const CallShape&) { return nullptr; }

const char* accepts_node_group(const CallShape& s) {
  if (s.ranks_per_node < 2) return "the node has a single rank";
  bool whole_node = s.group == GroupKind::Node || (s.group == GroupKind::World && s.nodes == 1);
  return whole_node ? nullptr : "needs all ranks on one node";
}

const char* accepts_cma(const CallShape& s) {
  if (const char* why = accepts_node_group(s)) return why;
  return s.cma ? nullptr : "cross-memory attach is off (SMDDP_CMA=0) or refused on this node";
}

namespace {

using C = Collective;
constexpr bool kHost = true;
constexpr bool kNoCuda = false;
#if SMDDP_CUDA_ENABLED
constexpr bool kNoHost = false;
constexpr bool kCuda = true;

// One algorithm for every collective that moves data (cuda/staged.cc).
Algorithm cuda_staged_row(Collective c) {
  return {{c, "cuda_staged", "device buffers: chunks staged in pinned host memory, host collective, copied back, pipelined",
           "CUDA device buffers only", kNoHost, kCuda},
          cuda_staged_accepts, cuda_staged};
}
#endif

std::vector<Algorithm> host_rows();

const std::vector<Algorithm>& table() {
  static const std::vector<Algorithm> rows = [] {
    std::vector<Algorithm> out = host_rows();
#if SMDDP_CUDA_ENABLED
    // Every collective with buffers (not the barrier).
    for (const CollectiveTraits& t : kCollectiveTraits) {
      if (t.send != Extent::None) out.push_back(cuda_staged_row(t.collective));
    }
#endif
    return out;
  }();
  return rows;
}

std::vector<Algorithm> host_rows() {
  return {
      {{C::AllReduce, "shm_direct", "each rank reduces its slice of every peer's staged chunk in shared memory",
        "all ranks on one node", kHost, kNoCuda}, accepts_node_group, allreduce_shm_direct},
      {{C::AllReduce, "ring", "ring reduce-scatter then ring allgather (bandwidth-optimal)", "none",
        kHost, kNoCuda}, accepts_any, allreduce_ring},
      {{C::AllReduce, "halving_doubling", "recursive halving reduce-scatter, doubling allgather (Rabenseifner), non-power-of-two fix-up",
        "none", kHost, kNoCuda}, accepts_any, allreduce_halving_doubling},
      {{C::AllReduce, "recursive_doubling", "log2(n) exchanges of the whole vector with partner me^2^k, one message per peer per step (small vectors across nodes), non-power-of-two fix-up",
        "none", kHost, kNoCuda}, accepts_any, allreduce_recursive_doubling},
      {{C::AllReduce, "tree", "binomial-tree reduce to rank 0, then binomial-tree broadcast", "none",
        kHost, kNoCuda}, accepts_any, allreduce_tree},
      {{C::AllReduce, "hierarchical", "intra-node reduce-scatter, inter-node allreduce per local rank, intra-node allgather",
        "every node has the same number of ranks", kHost, kNoCuda}, allreduce_hierarchical_accepts, allreduce_hierarchical},
      {{C::AllReduce, "sharded", "SMDDP/Herring: intra-node reduce-scatter, each node reduces 1/M of every shard and sends it back (direct, pipelined), intra-node allgather",
        "same rank count on every node; also runs on the cross group alone", kHost, kNoCuda}, allreduce_sharded_accepts, allreduce_sharded},
      {{C::AllReduce, "cma", "each rank reduces its slice reading peers' inputs straight from their memory (process_vm_readv) and writes the result into every rank's output (process_vm_writev)",
        "all ranks on one node, cross-memory attach allowed", kHost, kNoCuda}, accepts_cma, allreduce_cma},
      {{C::AllGather, "shm_direct", "each rank stages its block, every rank copies all blocks out of shared memory",
        "all ranks on one node", kHost, kNoCuda}, accepts_node_group, allgather_shm_direct},
      {{C::AllGather, "ring", "n-1 ring steps, each forwarding the block received last", "none",
        kHost, kNoCuda}, accepts_any, allgather_ring},
      {{C::AllGather, "recursive_doubling", "log2(n) exchanges of doubling size", "power-of-two rank count",
        kHost, kNoCuda}, allgather_recursive_doubling_accepts, allgather_recursive_doubling},
      {{C::AllGather, "direct", "every rank sends its block straight to every other, all at once (SMDDP's inter-node AllGather)",
        "none", kHost, kNoCuda}, accepts_any, allgather_direct},
      {{C::AllGather, "cma", "every rank reads each peer's block straight from its memory (process_vm_readv, one copy)",
        "all ranks on one node, cross-memory attach allowed", kHost, kNoCuda}, accepts_cma, allgather_cma},
      {{C::ReduceScatter, "shm_direct", "each rank reduces its block from every peer's staged input in shared memory",
        "all ranks on one node", kHost, kNoCuda}, accepts_node_group, reduce_scatter_shm_direct},
      {{C::ReduceScatter, "ring", "n-1 ring steps accumulating the travelling block", "none",
        kHost, kNoCuda}, accepts_any, reduce_scatter_ring},
      {{C::ReduceScatter, "recursive_halving", "log2(n) exchanges of halving size, node-mates first (fewer bytes between nodes than the ring)",
        "none", kHost, kNoCuda}, accepts_any, reduce_scatter_recursive_halving},
      {{C::Broadcast, "shm_direct", "the root stages chunks, the others copy them out, pipelined",
        "all ranks on one node", kHost, kNoCuda}, accepts_node_group, broadcast_shm_direct},
      {{C::Broadcast, "tree", "binomial tree from the root", "none", kHost, kNoCuda}, accepts_any,
       broadcast_tree},
      {{C::Broadcast, "chain", "the vector in chunks down a chain of the ranks, node by node, each rank forwarding chunk i while it receives chunk i+1 (pipelined, bandwidth-optimal)",
        "none", kHost, kNoCuda}, accepts_any, broadcast_chain},
      {{C::Broadcast, "cma", "every rank reads the root's buffer straight from its memory (process_vm_readv, one copy)",
        "all ranks on one node, cross-memory attach allowed", kHost, kNoCuda}, accepts_cma, broadcast_cma},
      {{C::Reduce, "shm_direct", "each rank reduces its slice in shared memory, the root collects",
        "all ranks on one node", kHost, kNoCuda}, accepts_node_group, reduce_shm_direct},
      {{C::Reduce, "tree", "binomial tree towards the root", "none", kHost, kNoCuda}, accepts_any,
       reduce_tree},
      {{C::AllToAll, "shm_direct", "each rank stages its blocks, each peer copies out its own",
        "all ranks on one node", kHost, kNoCuda}, accepts_node_group, alltoall_shm_direct},
      {{C::AllToAll, "pairwise", "n-1 steps, step s sends to me+s and receives from me-s", "none",
        kHost, kNoCuda}, accepts_any, alltoall_pairwise},
      {{C::AllToAll, "cma", "every rank reads its block straight from each peer's memory (process_vm_readv, one copy)",
        "all ranks on one node, cross-memory attach allowed", kHost, kNoCuda}, accepts_cma, alltoall_cma},
      {{C::Gather, "direct", "every rank sends its block straight to the root, which receives them all at once",
        "none", kHost, kNoCuda}, accepts_any, gather_direct},
      {{C::Scatter, "direct", "the root sends each rank its block straight, all at once", "none",
        kHost, kNoCuda}, accepts_any, scatter_direct},
      {{C::SendRecv, "ring", "send to me+1 and receive from me-1 at once (ring neighbour exchange)", "none",
        kHost, kNoCuda}, accepts_any, sendrecv_ring},
      {{C::AllToAllV, "pairwise", "n-1 steps, step s sends my part for me+s and receives me-s's part for me",
        "none", kHost, kNoCuda}, accepts_any, alltoallv_pairwise},
      {{C::Barrier, "shm", "counters in shared memory", "all ranks on one node", kHost, kNoCuda},
       accepts_node_group, barrier_shm},
      {{C::Barrier, "dissemination", "ceil(log2 n) rounds of one-byte messages", "none",
        kHost, kNoCuda}, accepts_any, barrier_dissemination},
  };
}

const std::vector<AlgorithmInfo>& infos() {
  static const std::vector<AlgorithmInfo> list = [] {
    std::vector<AlgorithmInfo> out;
    for (const auto& a : table()) out.push_back(a.info);
    return out;
  }();
  return list;
}

}  // namespace

std::span<const Algorithm> algorithm_registry() { return table(); }

const Algorithm* find_algorithm(Collective c, std::string_view name) {
  for (const auto& a : table()) {
    if (a.info.collective == c && a.info.name == name) return &a;
  }
  return nullptr;
}

std::span<const AlgorithmInfo> list_algorithms() { return infos(); }

bool algorithm_exists(Collective c, std::string_view name) { return find_algorithm(c, name) != nullptr; }

}  // namespace smddp
