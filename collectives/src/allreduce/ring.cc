// Ring allreduce = ring reduce-scatter + ring allgather over balanced
// blocks, run through the collective entry point on the same group.
#include "algorithms/catalog.h"
#include "algorithms/registry.h"

namespace smddp {

void allreduce_ring(Context& ctx, const Group& g, const Call& call) {
  // Resolved once, not looked up by name on every call.
  static const Algorithm& rs_ring = *find_algorithm(Collective::ReduceScatter, "ring");
  static const Algorithm& ag_ring = *find_algorithm(Collective::AllGather, "ring");
  const size_t es = call.esize();
  copy_if_distinct(call.recv, call.send, call.count * es);
  Call rs = call;
  rs.collective = Collective::ReduceScatter;
  rs.blocks = patterns::Partition::balanced(call.count, g.size());
  rs.send = call.recv;
  rs.recv = at(call.recv, rs.blocks.offset(g.me) * es);
  ctx.run(g, rs, rs_ring);
  Call ag = rs;
  ag.collective = Collective::AllGather;
  ag.send = rs.recv;
  ag.recv = call.recv;
  ctx.run(g, ag, ag_ring);
}

}  // namespace smddp
