// Intra-node reduce: as the shm-direct allreduce, but only the root collects
// the reduced slices (small chunks: the root reduces everything itself).
#include "algorithms/catalog.h"
#include "algorithms/shm_direct.h"
#include "core/copy.h"
#include "smddp/reduce.h"

namespace smddp {

void reduce_shm_direct(Context& ctx, const Group&, const Call& call) {
  ShmSteps& s = *ctx.steps;
  const size_t es = call.esize();
  const size_t chunk = s.slot_bytes() / es;
  const int n = s.size();
  const int me = s.me();
  const bool is_root = me == call.root;
  for (size_t off = 0; off < call.count; off += chunk) {
    const size_t c = std::min(chunk, call.count - off);
    s.begin(ctx.scope);
    std::memcpy(s.stage(me), at(call.send, off * es), c * es);
    s.post();
    if (c * es <= shm_direct::kReplicatedReduceBytes) {
      if (is_root) {
        s.wait_posted(ctx.scope);
        reduce(at(call.recv, off * es), shm_direct::stage_pointers(s, 0).data(), n, c, call.dtype, call.op);
      }
      s.finish();
      continue;
    }
    s.wait_posted(ctx.scope);
    const auto slices = patterns::Partition::balanced(c, n);
    const size_t mine = slices.offset(me) * es;
    reduce(s.result(me) + mine, shm_direct::stage_pointers(s, mine).data(), n, slices.length(me),
           call.dtype, call.op);
    s.post_reduced();
    if (is_root) {
      s.wait_reduced(ctx.scope);
      for (int p = 0; p < n; ++p) {
        const size_t o = slices.offset(p) * es;
        copy_out(at(call.recv, off * es + o), s.result(p) + o, slices.length(p) * es, call.count * es);
      }
    }
    s.finish();
  }
}

}  // namespace smddp
