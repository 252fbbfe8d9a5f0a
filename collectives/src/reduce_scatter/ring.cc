// Ring reduce-scatter. In step s (0..n-2) a rank sends the partial sum of
// block (me-s-1) to its right neighbour and receives the partial sum of block
// (me-s-2) from its left, adding its own input to it. After n-1 steps the
// block that arrives last is its own, complete. Two scratch blocks alternate
// so the input is never modified.
#include "algorithms/catalog.h"
#include "smddp/reduce.h"

namespace smddp {

void reduce_scatter_ring(Context& ctx, const Group& g, const Call& call) {
  const int n = g.size();
  const int me = g.me;
  const size_t es = call.esize();
  const auto& blocks = call.blocks;
  if (n == 1) {
    copy_if_distinct(call.recv, call.send, blocks.total * es);
    return;
  }
  const size_t max_bytes = blocks.max_length() * es;
  char* tmp[2] = {ctx.scratch.get(ScratchSlot::Incoming, max_bytes),
                  ctx.scratch.get(ScratchSlot::Accumulator, max_bytes)};
  const int right = patterns::ring_next(me, n);
  const int left = patterns::ring_prev(me, n);
  const char* outgoing = at(call.send, blocks.offset(patterns::mod(me - 1, n)) * es);
  for (int s = 0; s <= n - 2; ++s) {
    const int sb = patterns::mod(me - s - 1, n);
    const int rb = patterns::mod(me - s - 2, n);
    char* incoming = tmp[s % 2];
    ctx.exchange(g, right, outgoing, blocks.length(sb) * es, left, incoming, blocks.length(rb) * es);
    const void* own = at(call.send, blocks.offset(rb) * es);
    if (s < n - 2) {
      reduce_into(incoming, own, blocks.length(rb), call.dtype, call.op);
      outgoing = incoming;
    } else {
      const void* srcs[2] = {own, incoming};  // rb == me: the output block
      reduce(call.recv, srcs, 2, blocks.length(rb), call.dtype, call.op);
    }
  }
}

}  // namespace smddp
