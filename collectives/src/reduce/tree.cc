// Binomial-tree reduce: combine the children's partial results (nearest
// child first, it finishes first), then pass the sum to the parent. The
// root accumulates in its output; other ranks in scratch.
#include "algorithms/catalog.h"
#include "smddp/reduce.h"

namespace smddp {

void reduce_tree(Context& ctx, const Group& g, const Call& call) {
  const size_t bytes = call.count * call.esize();
  const auto tree = patterns::binomial_tree(g.me, call.root, g.size());
  void* acc = tree.parent < 0 ? call.recv : ctx.scratch.get(ScratchSlot::Accumulator, bytes);
  copy_if_distinct(acc, call.send, bytes);
  void* incoming = ctx.scratch.get(ScratchSlot::Incoming, bytes);
  for (auto child = tree.children.rbegin(); child != tree.children.rend(); ++child) {
    ctx.recv(g, *child, incoming, bytes);
    reduce_into(acc, incoming, call.count, call.dtype, call.op);
  }
  if (tree.parent >= 0) ctx.send(g, tree.parent, acc, bytes);
}

}  // namespace smddp
