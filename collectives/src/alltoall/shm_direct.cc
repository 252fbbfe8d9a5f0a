// Intra-node alltoall: per step each rank stages a chunk of every outgoing
// block (block p at stage offset p * chunk); each rank copies its own chunk
// out of every peer's stage buffer.
#include "algorithms/catalog.h"
#include "algorithms/shm_direct.h"
#include "core/copy.h"

namespace smddp {

void alltoall_shm_direct(Context& ctx, const Group&, const Call& call) {
  ShmSteps& s = *ctx.steps;
  const size_t es = call.esize();
  const int n = s.size();
  const int me = s.me();
  const size_t chunk = s.slot_bytes() / (es * n);
  for (size_t off = 0; off < call.count; off += chunk) {
    const size_t c = std::min(chunk, call.count - off);
    s.begin(ctx.scope);
    for (int p = 0; p < n; ++p) {
      std::memcpy(s.stage(me) + p * chunk * es, at(call.send, (p * call.count + off) * es), c * es);
    }
    s.post();
    s.wait_posted(ctx.scope);
    for (int p = 0; p < n; ++p) {
      copy_out(at(call.recv, (p * call.count + off) * es), s.stage(p) + me * chunk * es, c * es,
               call.count * n * es);
    }
    s.finish();
  }
}

}  // namespace smddp
