// Ring allreduce = ring reduce-scatter + ring allgather over balanced
// blocks, run through the collective entry point on the same group.
#include "algorithms/catalog.h"

namespace smddp {

void allreduce_ring(Context& ctx, const Group& g, const Call& call) {
  const size_t es = call.esize();
  copy_if_distinct(call.recv, call.send, call.count * es);
  Call rs = call;
  rs.collective = Collective::ReduceScatter;
  rs.blocks = patterns::Partition::balanced(call.count, g.size());
  rs.send = call.recv;
  rs.recv = at(call.recv, rs.blocks.offset(g.me) * es);
  ctx.run(g, rs, "ring");
  Call ag = rs;
  ag.collective = Collective::AllGather;
  ag.send = rs.recv;
  ag.recv = call.recv;
  ctx.run(g, ag, "ring");
}

}  // namespace smddp
