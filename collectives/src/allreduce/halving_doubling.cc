// Rabenseifner's allreduce: recursive halving reduce-scatter, then recursive
// doubling allgather, over p = pow2_floor(n) "virtual" ranks. With n not a
// power of two, the first 2*(n-p) ranks pair up first: the even one hands
// its vector to the odd one and sits out, and gets the result back at the
// end (the fix-up). Blocks are balanced over the p virtual ranks; `lo..hi`
// is the range of blocks a rank is still responsible for. Partners on the
// same node come first (patterns.h), so the large halves stay in the node.
#include <vector>

#include "algorithms/catalog.h"
#include "smddp/reduce.h"

namespace smddp {

void allreduce_halving_doubling(Context& ctx, const Group& g, const Call& call) {
  const size_t es = call.esize();
  const size_t bytes = call.count * es;
  copy_if_distinct(call.recv, call.send, bytes);
  const patterns::HalvingDoubling hd(g.size(), ctx.nodes_of(g));
  const int me = g.me;
  char* tmp = ctx.scratch.get(ScratchSlot::Incoming, bytes);

  if (hd.extra && me < 2 * hd.extra) {
    if (hd.sits_out(me)) {
      ctx.send(g, hd.fixup_partner(me), call.recv, bytes);
    } else {
      ctx.recv(g, hd.fixup_partner(me), tmp, bytes);
      reduce_into(call.recv, tmp, call.count, call.dtype, call.op);
    }
  }

  const int v = hd.virtual_rank(me);
  if (v >= 0) {
    const auto blocks = patterns::Partition::balanced(call.count, hd.pof2);
    auto offset = [&](int b) { return blocks.offset(b) * es; };
    int lo = 0, hi = hd.pof2;
    for (int mask : hd.masks) {
      const int partner = hd.real_rank(v ^ mask);
      const int mid = lo + (hi - lo) / 2;
      const bool keep_low = (v & mask) == 0;
      const int keep_lo = keep_low ? lo : mid, keep_hi = keep_low ? mid : hi;
      const int give_lo = keep_low ? mid : lo, give_hi = keep_low ? hi : mid;
      ctx.exchange(g, partner, at(call.recv, offset(give_lo)), offset(give_hi) - offset(give_lo),
                   partner, tmp, offset(keep_hi) - offset(keep_lo));
      reduce_into(at(call.recv, offset(keep_lo)), tmp,
                  blocks.offset(keep_hi) - blocks.offset(keep_lo), call.dtype, call.op);
      lo = keep_lo;
      hi = keep_hi;
    }
    for (auto m = hd.masks.rbegin(); m != hd.masks.rend(); ++m) {
      const int mask = *m;
      const int partner = hd.real_rank(v ^ mask);
      const int their_lo = (v & mask) ? lo - (hi - lo) : hi;  // the other half we split
      const int their_hi = their_lo + (hi - lo);
      ctx.exchange(g, partner, at(call.recv, offset(lo)), offset(hi) - offset(lo), partner,
                   at(call.recv, offset(their_lo)), offset(their_hi) - offset(their_lo));
      lo = std::min(lo, their_lo);
      hi = std::max(hi, their_hi);
    }
  }

  if (hd.extra && me < 2 * hd.extra) {
    if (hd.sits_out(me)) {
      ctx.recv(g, hd.fixup_partner(me), call.recv, bytes);
    } else {
      ctx.send(g, hd.fixup_partner(me), call.recv, bytes);
    }
  }
}

}  // namespace smddp
