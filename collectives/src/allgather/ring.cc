// Ring allgather, in place on the output: in step s a rank forwards block
// (me-s) to its right neighbour and receives block (me-s-1) from its left.
#include "algorithms/catalog.h"

namespace smddp {

void allgather_ring(Context& ctx, const Group& g, const Call& call) {
  const int n = g.size();
  const int me = g.me;
  const size_t es = call.esize();
  const auto& blocks = call.blocks;
  copy_if_distinct(at(call.recv, blocks.offset(me) * es), call.send, blocks.length(me) * es);
  const int right = patterns::ring_next(me, n);
  const int left = patterns::ring_prev(me, n);
  for (int s = 0; s <= n - 2; ++s) {
    const int sb = patterns::mod(me - s, n);
    const int rb = patterns::mod(me - s - 1, n);
    ctx.exchange(g, right, at(call.recv, blocks.offset(sb) * es), blocks.length(sb) * es, left,
                 at(call.recv, blocks.offset(rb) * es), blocks.length(rb) * es);
  }
}

}  // namespace smddp
