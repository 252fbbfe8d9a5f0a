// Intra-node allgather, single copy: every rank exposes its output and
// writes its block straight into every peer's, in rotating order
// (process_vm_writev, faster than the read path; see alltoall/cma.cc). In
// place our block already sits in our output; peers write only the others.
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
  s.expose(call.recv);
  s.post();
  copy_if_distinct(at(call.recv, blocks.offset(me) * es), call.send, blocks.length(me) * es);
  s.wait_posted(ctx.scope);
  for (int i = 1; i < n; ++i) {
    const int p = (me + i) % n;
    void* output = const_cast<void*>(s.exposed(p));  // exposed for us to write into
    cma::write(ctx, p, at(output, blocks.offset(me) * es), call.send, blocks.length(me) * es);
  }
  s.finish();
  s.wait_finished(ctx.scope);  // peers are done writing into our output
}

}  // namespace smddp
