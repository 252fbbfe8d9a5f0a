// Direct gather: every rank sends its block straight to the root, which
// posts all n-1 receives at once into block r of its buffer. One step of
// latency; the root's inbound link carries everything, as it must. In place
// the root's block already sits at recv + root*count (copy_if_distinct).
#include <vector>

#include "algorithms/catalog.h"

namespace smddp {

void gather_direct(Context& ctx, const Group& g, const Call& call) {
  const int n = g.size();
  const size_t block = call.count * call.esize();
  if (g.me != call.root) {
    ctx.send(g, call.root, call.send, block);
    return;
  }
  copy_if_distinct(at(call.recv, call.root * block), call.send, block);
  if (n == 1) return;
  std::vector<Request> requests;
  requests.reserve(static_cast<size_t>(n - 1));
  for (int from = 0; from < n; ++from) {
    if (from == call.root) continue;
    requests.push_back(Request{Request::Kind::Recv, g.ranks[from], ctx.tag, at(call.recv, from * block), block});
  }
  for (auto& r : requests) ctx.router().post(r);
  ctx.router().wait(requests, ctx.scope);
}

}  // namespace smddp
