// Intra-node broadcast: the root stages chunks, the others copy them out.
// The root runs at most two steps ahead (double buffering); small
// broadcasts use lanes (shm_steps.h), so a root may run many calls ahead of
// readers that share its cores, as an eager MPI broadcast does.
#include "algorithms/catalog.h"
#include "algorithms/shm_direct.h"
#include "core/copy.h"

namespace smddp {
namespace {

constexpr size_t kLaneBytes = 4096;  // broadcasts up to this run in lanes

}  // namespace

void broadcast_shm_direct(Context& ctx, const Group&, const Call& call) {
  ShmSteps& s = *ctx.steps;
  const size_t es = call.esize();
  const size_t chunk = s.slot_bytes() / es;
  const int root = call.root;
  const bool is_root = s.me() == root;
  const size_t lane = call.count * es <= kLaneBytes && kLaneBytes <= s.slot_bytes() ? kLaneBytes : 0;
  if (is_root) copy_if_distinct(call.recv, call.send, call.count * es);
  for (size_t off = 0; off < call.count; off += chunk) {
    const size_t c = std::min(chunk, call.count - off);
    s.begin(ctx.scope, lane);
    if (is_root) {
      std::memcpy(s.stage(root), at(call.recv, off * es), c * es);
      s.post();
    } else {
      s.wait_posted(root, ctx.scope);
      copy_out(at(call.recv, off * es), s.stage(root), c * es, call.count * es);
    }
    s.finish();
  }
}

}  // namespace smddp
