// Pairwise-exchange alltoallv: alltoall's schedule (step s sends to me+s,
// receives from me-s) with per-peer counts. Buffers are packed by peer, so
// the offset of peer p's part is the sum of the counts before it. In place
// the outgoing parts are saved to scratch first: incoming parts of other
// lengths would overwrite them.
#include <vector>

#include "algorithms/catalog.h"

namespace smddp {

void alltoallv_pairwise(Context& ctx, const Group& g, const Call& call) {
  const int n = g.size();
  const int me = g.me;
  const size_t es = call.esize();
  std::vector<size_t> soff(static_cast<size_t>(n) + 1, 0), roff(static_cast<size_t>(n) + 1, 0);
  for (int p = 0; p < n; ++p) {
    soff[p + 1] = soff[p] + call.send_counts[p] * es;
    roff[p + 1] = roff[p] + call.recv_counts[p] * es;
  }
  const void* send = call.send;
  if (send == call.recv && soff[n] > 0) {
    void* saved = ctx.scratch.get(ScratchSlot::SavedInput, soff[n]);
    std::memcpy(saved, send, soff[n]);
    send = saved;
  }
  copy_if_distinct(at(call.recv, roff[me]), at(send, soff[me]), call.recv_counts[me] * es);
  for (int s = 1; s < n; ++s) {
    const int to = patterns::pairwise_send_peer(me, s, n);
    const int from = patterns::pairwise_recv_peer(me, s, n);
    ctx.exchange(g, to, at(send, soff[to]), soff[to + 1] - soff[to], from, at(call.recv, roff[from]),
                 roff[from + 1] - roff[from]);
  }
}

}  // namespace smddp
