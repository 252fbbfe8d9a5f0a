// The frame shared by the allreduce algorithms that span nodes in three
// phases (hierarchical, sharded): a reduce-scatter inside each node, a
// cross-node step on this rank's block, an allgather inside the node.
#pragma once

#include "algorithms/context.h"
#include "algorithms/registry.h"

namespace smddp::node_phases {

// Why the three phases cannot run (nullptr when they can).
inline const char* why_not(const CallShape& shape) {
  if (shape.nodes < 2) return "needs ranks on more than one node";
  return shape.uniform_nodes ? nullptr : "nodes have different rank counts";
}

// Runs the phases; `across(block, count)` reduces this rank's block (count
// elements at `block`, inside call.recv) with the same block of every node.
template <typename Across>
void run(Context& ctx, const Call& call, Across&& across) {
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

  across(mine, blocks.length(ctx.node.me));

  Call ag = rs;
  ag.collective = Collective::AllGather;
  ag.send = mine;
  ag.recv = call.recv;
  ctx.run(ctx.node, ag);
}

}  // namespace smddp::node_phases
