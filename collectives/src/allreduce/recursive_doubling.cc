// Recursive-doubling allreduce for small vectors: log2(p) steps, each one
// exchange of the whole vector with the partner v ^ mask and a reduction,
// over p = pow2_floor(n) virtual ranks (the first 2*(n-p) ranks pair up
// first, as in halving_doubling). One message per peer per step, where
// halving-doubling takes two exchanges per partner (a halving and a
// doubling step): across two hosts an 8 B allreduce is one network round
// trip instead of two. Each step combines the two vectors with the lower
// virtual rank's first, so every rank ends with the same bits.
#include <cstring>

#include "algorithms/catalog.h"
#include "smddp/reduce.h"

namespace smddp {
namespace {

// recv = op(recv, theirs) or op(theirs, recv): the lower rank's vector first.
// reduce() lets its output alias only the first source, so the second order
// reduces into `theirs` and copies (small vectors: a few cache lines).
void combine(const Call& call, char* theirs, bool mine_first) {
  if (call.count == 0) return;  // nothing to combine (and no buffers to name)
  if (mine_first) {
    const void* srcs[2] = {call.recv, theirs};
    reduce(call.recv, srcs, 2, call.count, call.dtype, call.op);
    return;
  }
  const void* srcs[2] = {theirs, call.recv};
  reduce(theirs, srcs, 2, call.count, call.dtype, call.op);
  std::memcpy(call.recv, theirs, call.count * call.esize());
}

}  // namespace

void allreduce_recursive_doubling(Context& ctx, const Group& g, const Call& call) {
  const size_t es = call.esize();
  const size_t bytes = call.count * es;
  copy_if_distinct(call.recv, call.send, bytes);
  const patterns::HalvingDoubling hd(g.size());
  const int me = g.me;
  char* tmp = ctx.scratch.get(ScratchSlot::Incoming, bytes);

  if (hd.extra && me < 2 * hd.extra) {
    if (hd.sits_out(me)) {
      ctx.send(g, hd.fixup_partner(me), call.recv, bytes);
    } else {
      ctx.recv(g, hd.fixup_partner(me), tmp, bytes);
      combine(call, tmp, hd.fixup_partner(me) > me);  // the one sitting out is the lower rank
    }
  }

  const int v = hd.virtual_rank(me);
  if (v >= 0) {
    for (int mask = 1; mask < hd.pof2; mask *= 2) {
      const int partner = hd.real_rank(v ^ mask);
      ctx.exchange(g, partner, call.recv, bytes, partner, tmp, bytes);
      combine(call, tmp, (v & mask) == 0);
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
