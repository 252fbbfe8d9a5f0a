// Recursive-doubling allgather for power-of-two groups: in round k a rank
// holds the 2^k blocks of its aligned group and swaps them with the partner
// me ^ 2^k, doubling what it holds. log2(n) rounds: good for small blocks.
#include "algorithms/catalog.h"

namespace smddp {

const char* allgather_recursive_doubling_accepts(const CallShape& shape) {
  return patterns::is_pow2(shape.group_size) ? nullptr : "needs a power-of-two number of ranks";
}

void allgather_recursive_doubling(Context& ctx, const Group& g, const Call& call) {
  const int n = g.size();
  const int me = g.me;
  const size_t es = call.esize();
  const auto& blocks = call.blocks;
  copy_if_distinct(at(call.recv, blocks.offset(me) * es), call.send, blocks.length(me) * es);
  for (int d = 1; d < n; d <<= 1) {
    const int partner = me ^ d;
    const int mine = me & ~(d - 1);
    const int theirs = partner & ~(d - 1);
    auto span_bytes = [&](int first) { return (blocks.offset(first + d) - blocks.offset(first)) * es; };
    ctx.exchange(g, partner, at(call.recv, blocks.offset(mine) * es), span_bytes(mine), partner,
                 at(call.recv, blocks.offset(theirs) * es), span_bytes(theirs));
  }
}

}  // namespace smddp
