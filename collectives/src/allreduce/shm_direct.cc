// Intra-node allreduce for memory bandwidth. Per step, every rank stages a
// chunk of its input in shared memory. Then either
//  - sliced: each rank reduces its slice of the chunk from all stage buffers
//    (one pass over n sources while they are in cache) into its result
//    buffer, and every rank copies all slices out; or
//  - replicated (2 ranks, or tiny chunks): every rank reduces the whole chunk
//    itself, reading its own input in place. With 2 ranks this moves the same
//    bytes between cores as the sliced form, with one synchronisation less and
//    no result buffer.
// Sources are always combined in rank order, so every rank gets the same
// bits. Chunks are one stage buffer long, so a step's working set stays in
// cache; steps alternate between two buffers so they overlap across ranks.
#include "algorithms/catalog.h"
#include "algorithms/shm_direct.h"
#include "core/copy.h"
#include "smddp/reduce.h"

namespace smddp {

void allreduce_shm_direct(Context& ctx, const Group&, const Call& call) {
  ShmSteps& s = *ctx.steps;
  const size_t es = call.esize();
  const size_t chunk = s.slot_bytes() / es;
  const int n = s.size();
  const int me = s.me();
  for (size_t off = 0; off < call.count; off += chunk) {
    const size_t c = std::min(chunk, call.count - off);
    s.begin(ctx.scope);
    std::memcpy(s.stage(me), at(call.send, off * es), c * es);
    s.post();
    s.wait_posted(ctx.scope);
    if (n <= shm_direct::kReplicatedReduceRanks || c * es <= shm_direct::kReplicatedReduceBytes) {
      auto& srcs = shm_direct::stage_pointers(s, 0);
      srcs[me] = at(call.send, off * es);  // our own input, still in cache
      // Reduce into cache-resident scratch, then stream out: no read for
      // ownership of the output, and no aliasing of the sources.
      char* out = ctx.scratch.get(ScratchSlot::Reduced, c * es);
      reduce(out, srcs.data(), n, c, call.dtype, call.op);
      copy_out(at(call.recv, off * es), out, c * es, call.count * es);
      s.finish();
      continue;
    }
    const auto slices = patterns::Partition::balanced(c, n);
    const size_t mine = slices.offset(me) * es;
    reduce(s.result(me) + mine, shm_direct::stage_pointers(s, mine).data(), n, slices.length(me),
           call.dtype, call.op);
    s.post_reduced();
    s.wait_reduced(ctx.scope);
    for (int p = 0; p < n; ++p) {
      const size_t o = slices.offset(p) * es;
      copy_out(at(call.recv, off * es + o), s.result(p) + o, slices.length(p) * es, call.count * es);
    }
    s.finish();
  }
}

}  // namespace smddp
