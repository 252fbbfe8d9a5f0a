// Hierarchical allreduce: reduce-scatter inside each node (local rank i ends
// with block i), allreduce of block i among the ranks with local rank i on
// every node, allgather inside the node. Inter-node traffic is 1/L of the
// vector per rank, spread over all L local ranks.
#include "algorithms/catalog.h"
#include "allreduce/node_phases.h"

namespace smddp {

const char* allreduce_hierarchical_accepts(const CallShape& shape) {
  if (shape.group != GroupKind::World) return "runs on the whole communicator only";
  return node_phases::why_not(shape);
}

void allreduce_hierarchical(Context& ctx, const Group&, const Call& call) {
  node_phases::run(ctx, call, [&](char* block, size_t count) {
    Call ar = call;
    ar.send = block;
    ar.recv = block;
    ar.count = count;
    ctx.run(ctx.cross, ar);
  });
}

}  // namespace smddp
