// Intra-node allgather: per step each rank stages a chunk of its block and
// copies every peer's chunk out of shared memory.
#include "algorithms/catalog.h"
#include "algorithms/shm_direct.h"
#include "core/copy.h"

namespace smddp {

void allgather_shm_direct(Context& ctx, const Group&, const Call& call) {
  ShmSteps& s = *ctx.steps;
  const size_t es = call.esize();
  const size_t chunk = s.slot_bytes() / es;
  const int n = s.size();
  const int me = s.me();
  const auto& blocks = call.blocks;
  for (size_t off = 0; off < blocks.max_length(); off += chunk) {
    s.begin(ctx.scope);
    const size_t mine = shm_direct::piece(blocks.length(me), off, chunk);
    std::memcpy(s.stage(me), at(call.send, off * es), mine * es);
    s.post();
    copy_if_distinct(at(call.recv, (blocks.offset(me) + off) * es), at(call.send, off * es), mine * es);
    s.wait_posted(ctx.scope);
    for (int p = 0; p < n; ++p) {
      if (p == me) continue;
      const size_t len = shm_direct::piece(blocks.length(p), off, chunk);
      copy_out(at(call.recv, (blocks.offset(p) + off) * es), s.stage(p), len * es, blocks.total * es);
    }
    s.finish();
  }
}

}  // namespace smddp
