// Pairwise-exchange alltoall: in step s (1..n-1) send block (me+s) to rank
// me+s and receive block (me-s) from rank me-s. In place, the outgoing
// blocks are saved to scratch first.
#include "algorithms/catalog.h"

namespace smddp {

void alltoall_pairwise(Context& ctx, const Group& g, const Call& call) {
  const int n = g.size();
  const int me = g.me;
  const size_t block = call.count * call.esize();
  const void* send = call.send;
  if (send == call.recv && block > 0) {
    void* saved = ctx.scratch.get(ScratchSlot::SavedInput, block * n);
    std::memcpy(saved, send, block * n);
    send = saved;
  }
  copy_if_distinct(at(call.recv, me * block), at(send, me * block), block);
  for (int s = 1; s < n; ++s) {
    const int to = patterns::pairwise_send_peer(me, s, n);
    const int from = patterns::pairwise_recv_peer(me, s, n);
    ctx.exchange(g, to, at(send, to * block), block, from, at(call.recv, from * block), block);
  }
}

}  // namespace smddp
