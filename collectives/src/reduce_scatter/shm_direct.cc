// Intra-node reduce-scatter: per step each rank stages a chunk of every
// block (block p at stage offset p * chunk); rank p reduces chunk p of all
// stage buffers straight into its output.
#include "algorithms/catalog.h"
#include "algorithms/shm_direct.h"
#include "smddp/reduce.h"

namespace smddp {

void reduce_scatter_shm_direct(Context& ctx, const Group&, const Call& call) {
  ShmSteps& s = *ctx.steps;
  const size_t es = call.esize();
  const int n = s.size();
  const int me = s.me();
  const size_t chunk = s.slot_bytes() / (es * n);
  const auto& blocks = call.blocks;
  for (size_t off = 0; off < blocks.max_length(); off += chunk) {
    s.begin(ctx.scope);
    for (int p = 0; p < n; ++p) {
      const size_t len = shm_direct::piece(blocks.length(p), off, chunk);
      std::memcpy(s.stage(me) + p * chunk * es, at(call.send, (blocks.offset(p) + off) * es), len * es);
    }
    s.post();
    s.wait_posted(ctx.scope);
    const size_t len = shm_direct::piece(blocks.length(me), off, chunk);
    reduce(at(call.recv, off * es), shm_direct::stage_pointers(s, me * chunk * es).data(), n, len,
           call.dtype, call.op);
    s.finish();
  }
}

}  // namespace smddp
