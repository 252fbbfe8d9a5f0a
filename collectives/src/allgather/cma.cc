// Intra-node allgather, single copy: every rank exposes its block and reads
// every peer's straight into its output, in rotating order. In place our
// block already sits in the output, which peers read while we fill the
// other blocks.
#include "algorithms/catalog.h"
#include "algorithms/cma.h"
#include "algorithms/shm_steps.h"

namespace smddp {

void allgather_cma(Context& ctx, const Group&, const Call& call) {
  ShmSteps& s = *ctx.steps;
  const int n = s.size();
  const int me = s.me();
  const size_t es = call.esize();
  const auto& blocks = call.blocks;
  s.begin(ctx.scope);
  s.expose(call.send);
  s.post();
  copy_if_distinct(at(call.recv, blocks.offset(me) * es), call.send, blocks.length(me) * es);
  s.wait_posted(ctx.scope);
  for (int i = 1; i < n; ++i) {
    const int p = (me + i) % n;
    cma::read(ctx, p, at(call.recv, blocks.offset(p) * es), s.exposed(p), blocks.length(p) * es);
  }
  s.finish();
  s.wait_finished(ctx.scope);  // peers are done with our block
}

}  // namespace smddp
