// Binomial-tree broadcast: receive from the parent, then send to the
// children, farthest subtree first so the deepest paths start earliest.
#include "algorithms/catalog.h"

namespace smddp {

void broadcast_tree(Context& ctx, const Group& g, const Call& call) {
  const size_t bytes = call.count * call.esize();
  const auto tree = patterns::binomial_tree(g.me, call.root, g.size());
  if (tree.parent < 0) {
    copy_if_distinct(call.recv, call.send, bytes);
  } else {
    ctx.recv(g, tree.parent, call.recv, bytes);
  }
  for (int child : tree.children) ctx.send(g, child, call.recv, bytes);
}

}  // namespace smddp
