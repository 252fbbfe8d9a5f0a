// Intra-node alltoall, single copy: every rank exposes its output and
// writes the block addressed to each peer straight into that peer's
// (process_vm_writev: the kernel's write path is 10-15% faster than its
// read path on 4 KiB pages, docs/performance-history.md). Peers are written in
// rotating order (me+1, me+2, ...) so no rank's memory is written by
// everyone at once. In place, the send data is first copied aside, since
// peers write into our buffer while we still send from it.
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
  s.expose(call.recv);
  s.post();
  copy_if_distinct(at(call.recv, me * block), at(send, me * block), block);
  s.wait_posted(ctx.scope);
  for (int i = 1; i < n; ++i) {
    const int p = (me + i) % n;
    void* output = const_cast<void*>(s.exposed(p));  // exposed for us to write into
    cma::write(ctx, p, at(output, me * block), at(send, p * block), block);
  }
  s.finish();
  s.wait_finished(ctx.scope);  // peers are done writing into our output
}

}  // namespace smddp
