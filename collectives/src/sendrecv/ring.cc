// Ring neighbour exchange, as nccl-tests' sendrecv: every rank sends its
// buffer to rank me+1 and receives rank me-1's, both at once. In place the
// outgoing buffer is saved to scratch first, since the incoming one lands
// on it. One rank exchanges with itself: a copy.
#include "algorithms/catalog.h"

namespace smddp {

void sendrecv_ring(Context& ctx, const Group& g, const Call& call) {
  const int n = g.size();
  const size_t bytes = call.count * call.esize();
  if (n == 1) {
    copy_if_distinct(call.recv, call.send, bytes);
    return;
  }
  const void* send = call.send;
  if (send == call.recv && bytes > 0) {
    void* saved = ctx.scratch.get(ScratchSlot::SavedInput, bytes);
    std::memcpy(saved, send, bytes);
    send = saved;
  }
  ctx.exchange(g, patterns::mod(g.me + 1, n), send, bytes, patterns::mod(g.me - 1, n), call.recv, bytes);
}

}  // namespace smddp
