// Intra-node broadcast, single copy: the root exposes its buffer and every
// other rank copies it straight into its own, all at once; the root waits
// until they are done before its buffer may change.
#include "algorithms/catalog.h"
#include "algorithms/cma.h"
#include "algorithms/shm_steps.h"

namespace smddp {

void broadcast_cma(Context& ctx, const Group&, const Call& call) {
  ShmSteps& s = *ctx.steps;
  const size_t bytes = call.count * call.esize();
  const int root = call.root;
  s.begin(ctx.scope);
  if (s.me() == root) {
    s.expose(call.send);
    s.post();
    copy_if_distinct(call.recv, call.send, bytes);
  } else {
    s.wait_posted(root, ctx.scope);
    cma::read(ctx, root, call.recv, s.exposed(root), bytes);
  }
  s.finish();
  if (s.me() == root) s.wait_finished(ctx.scope);
}

}  // namespace smddp
