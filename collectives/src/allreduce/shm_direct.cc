// Intra-node allreduce for memory bandwidth. Per step, every rank stages a
// chunk of its input in shared memory; each rank then reduces its slice of
// the chunk from all stage buffers (one pass over n sources while they are in
// cache) into its result buffer, and every rank copies all slices out.
// Chunks are one stage buffer long, so a step's working set stays in cache;
// steps alternate between two buffers so they overlap across ranks.
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
    if (c * es <= shm_direct::kReplicatedReduceBytes) {
      reduce(at(call.recv, off * es), shm_direct::stage_pointers(s, 0).data(), n, c, call.dtype, call.op);
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
