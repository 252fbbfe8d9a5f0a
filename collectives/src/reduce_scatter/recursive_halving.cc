// Recursive halving reduce-scatter over p = pow2_floor(n) virtual ranks,
// with halving-doubling's fix-up (patterns.h): the first 2*(n-p) ranks pair
// up, the even one hands its whole input to the odd one and sits out, and
// gets its block back at the end. Each step a rank keeps the virtual ranks'
// blocks on its side of the mask, sends the rest to its partner and adds
// what the partner sends of its own side; after log2 p steps it holds its
// block alone. Masks whose partners share a node come first, so the halves
// that are large stay in the node: on H nodes the bytes a node sends out
// are (H-1)/H of the vector, where the ring's node-by-node order sends
// (n-1)/n. With node-mates first the blocks a step keeps are not adjacent:
// they are packed into one message, in ascending virtual rank on both sides.
#include <cstring>
#include <utility>
#include <vector>

#include "algorithms/catalog.h"
#include "smddp/reduce.h"

namespace smddp {

void reduce_scatter_recursive_halving(Context& ctx, const Group& g, const Call& call) {
  const int n = g.size();
  const int me = g.me;
  const size_t es = call.esize();
  const auto& blocks = call.blocks;
  const size_t total = blocks.total * es;
  if (n == 1) {
    copy_if_distinct(call.recv, call.send, total);
    return;
  }
  const patterns::HalvingDoubling hd(n, ctx.nodes_of(g));
  auto block_bytes = [&](int b) { return blocks.length(b) * es; };
  if (hd.sits_out(me)) {
    ctx.send(g, hd.fixup_partner(me), call.send, total);
    ctx.recv(g, hd.fixup_partner(me), call.recv, block_bytes(me));
    return;
  }
  char* acc = ctx.scratch.get(ScratchSlot::Accumulator, total);  // running sums, at the input's offsets
  char* tmp = ctx.scratch.get(ScratchSlot::Incoming, total);      // received, then packed to send
  const char* partial = static_cast<const char*>(call.send);  // where the running sums are: the input until the first reduction
  if (me < 2 * hd.extra) {
    ctx.recv(g, hd.fixup_partner(me), tmp, total);
    const void* srcs[2] = {call.send, tmp};
    reduce(acc, srcs, 2, blocks.total, call.dtype, call.op);
    partial = acc;
  }
  // Virtual rank w's blocks, as (byte offset, bytes).
  auto span = [&](int w) {
    const size_t lo = blocks.offset(hd.first_block(w)), hi = blocks.offset(hd.first_block(w + 1));
    return std::pair{lo * es, (hi - lo) * es};
  };
  const int v = hd.virtual_rank(me);
  int done = 0;  // the masks behind us
  std::vector<int> keep, give;
  for (int mask : hd.masks) {
    hd.split(v, done, mask, keep, give);
    size_t keep_bytes = 0;
    for (int w : keep) keep_bytes += span(w).second;
    // What we give: straight from the sums when it is one run, else packed
    // behind the space for what we receive (together at most the vector).
    const char* out = at(partial, span(give.front()).first);
    size_t give_bytes = span(give.back()).first + span(give.back()).second - span(give.front()).first;
    if (give.back() - give.front() + 1 != static_cast<int>(give.size())) {
      char* packed = tmp + keep_bytes;
      give_bytes = 0;
      for (int w : give) {
        const auto [off, len] = span(w);
        if (len) std::memcpy(packed + give_bytes, at(partial, off), len);  // empty blocks: no buffers
        give_bytes += len;
      }
      out = packed;
    }
    const int partner = hd.real_rank(v ^ mask);
    ctx.exchange(g, partner, out, give_bytes, partner, tmp, keep_bytes);
    size_t pos = 0;
    for (int w : keep) {
      const auto [off, len] = span(w);
      if (partial == acc) {
        reduce_into(acc + off, tmp + pos, len / es, call.dtype, call.op);
      } else {
        const void* srcs[2] = {at(partial, off), tmp + pos};
        reduce(acc + off, srcs, 2, len / es, call.dtype, call.op);
      }
      pos += len;
    }
    partial = acc;
    done |= mask;
  }
  if (me < 2 * hd.extra) {
    const int out_rank = hd.fixup_partner(me);
    ctx.send(g, out_rank, acc + blocks.offset(out_rank) * es, block_bytes(out_rank));
  }
  copy_if_distinct(call.recv, acc + blocks.offset(me) * es, block_bytes(me));
}

}  // namespace smddp
