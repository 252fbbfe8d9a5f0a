// Intra-node alltoall, single copy: every rank exposes its send buffer and
// reads the block addressed to it straight out of each peer's. Peers are
// read in rotating order (me+1, me+2, ...) so no rank's memory is read by
// everyone at once. In place, the send data is first copied aside, since
// peers read it while we overwrite our buffer.
#include "algorithms/catalog.h"
#include "algorithms/cma.h"
#include "algorithms/shm_steps.h"

namespace smddp {

void alltoall_cma(Context& ctx, const Group&, const Call& call) {
  ShmSteps& s = *ctx.steps;
  const int n = s.size();
  const int me = s.me();
  const size_t block = call.count * call.esize();
  const void* send = call.send;
  if (call.send == call.recv && block > 0) {
    void* aside = ctx.scratch.get(ScratchSlot::SavedInput, block * n);
    std::memcpy(aside, call.send, block * n);
    send = aside;
  }
  s.begin(ctx.scope);
  s.expose(send);
  s.post();
  copy_if_distinct(at(call.recv, me * block), at(send, me * block), block);
  s.wait_posted(ctx.scope);
  for (int i = 1; i < n; ++i) {
    const int p = (me + i) % n;
    cma::read(ctx, p, at(call.recv, p * block), at(s.exposed(p), me * block), block);
  }
  s.finish();
  s.wait_finished(ctx.scope);  // peers are done with our send buffer
}

}  // namespace smddp
