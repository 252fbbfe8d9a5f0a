// Hierarchical allreduce: reduce-scatter inside each node (local rank i ends
// with block i), allreduce of block i among the ranks with local rank i on
// every node, allgather inside the node. Inter-node traffic is 1/L of the
// vector per rank, spread over all L local ranks.
#include "algorithms/catalog.h"

namespace smddp {

const char* allreduce_hierarchical_accepts(const Context& ctx, const Group& g, const Call&) {
  if (g.kind != GroupKind::World) return "runs on the whole communicator only";
  if (ctx.topo.num_nodes < 2) return "needs ranks on more than one node";
  for (const auto& ranks : ctx.topo.node_ranks) {
    if (ranks.size() != ctx.topo.node_ranks[0].size()) return "nodes have different rank counts";
  }
  return nullptr;
}

void allreduce_hierarchical(Context& ctx, const Group&, const Call& call) {
  const size_t es = call.esize();
  copy_if_distinct(call.recv, call.send, call.count * es);
  const auto blocks = patterns::Partition::balanced(call.count, ctx.node.size());
  char* mine = at(call.recv, blocks.offset(ctx.node.me) * es);

  Call rs = call;
  rs.collective = Collective::ReduceScatter;
  rs.blocks = blocks;
  rs.send = call.recv;
  rs.recv = mine;
  ctx.run(ctx.node, rs);

  Call ar = call;
  ar.send = mine;
  ar.recv = mine;
  ar.count = blocks.length(ctx.node.me);
  ctx.run(ctx.cross, ar);

  Call ag = rs;
  ag.collective = Collective::AllGather;
  ag.send = mine;
  ag.recv = call.recv;
  ctx.run(ctx.node, ag);
}

}  // namespace smddp
