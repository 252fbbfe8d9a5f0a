// Direct allgather, as SMDDP's AllGather does between nodes: every rank
// sends its block straight to every other rank and receives every other
// block straight from its owner, all transfers posted at once. One step of
// latency instead of n-1 (ring) or log2(n) (recursive doubling), at the cost
// of n-1 concurrent flows per rank; the network, not a relay chain, carries
// the traffic. Peers are visited in the order me+1, me+2, ... so not every
// rank starts with the same destination.
#include <vector>

#include "algorithms/catalog.h"

namespace smddp {

void allgather_direct(Context& ctx, const Group& g, const Call& call) {
  const int n = g.size();
  const int me = g.me;
  const size_t es = call.esize();
  const auto& blocks = call.blocks;
  char* own = at(call.recv, blocks.offset(me) * es);
  copy_if_distinct(own, call.send, blocks.length(me) * es);
  if (n == 1) return;
  std::vector<Request> requests(2 * static_cast<size_t>(n - 1));
  for (int j = 1; j < n; ++j) {
    const int from = patterns::mod(me - j, n);
    requests[j - 1] = Request{Request::Kind::Recv, g.ranks[from], ctx.tag,
                              at(call.recv, blocks.offset(from) * es), blocks.length(from) * es};
    ctx.router().post(requests[j - 1]);
  }
  for (int j = 1; j < n; ++j) {
    const int to = patterns::mod(me + j, n);
    Request& r = requests[n - 2 + j];
    r = Request{Request::Kind::Send, g.ranks[to], ctx.tag, own, blocks.length(me) * es};
    ctx.router().post(r);
  }
  ctx.router().wait(requests, ctx.scope);
}

}  // namespace smddp
