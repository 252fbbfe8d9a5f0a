// Tree allreduce: binomial reduce to group index 0, binomial broadcast back.
// 2*log2(n) latency steps: the choice for tiny vectors across nodes.
#include "algorithms/catalog.h"
#include "algorithms/registry.h"

namespace smddp {

void allreduce_tree(Context& ctx, const Group& g, const Call& call) {
  // Resolved once, not looked up by name on every call.
  static const Algorithm& tree_reduce = *find_algorithm(Collective::Reduce, "tree");
  static const Algorithm& tree_broadcast = *find_algorithm(Collective::Broadcast, "tree");
  copy_if_distinct(call.recv, call.send, call.count * call.esize());
  Call step = call;
  step.send = call.recv;
  step.root = 0;
  step.collective = Collective::Reduce;
  ctx.run(g, step, tree_reduce);
  step.collective = Collective::Broadcast;
  ctx.run(g, step, tree_broadcast);
}

}  // namespace smddp
