// Direct scatter: the root sends block r of its buffer straight to rank r,
// all n-1 sends posted at once; every other rank receives its block. One
// step of latency. In place the root's own block is already at
// send + root*count (copy_if_distinct).
#include <vector>

#include "algorithms/catalog.h"

namespace smddp {

void scatter_direct(Context& ctx, const Group& g, const Call& call) {
  const int n = g.size();
  const size_t block = call.count * call.esize();
  if (g.me != call.root) {
    ctx.recv(g, call.root, call.recv, block);
    return;
  }
  copy_if_distinct(call.recv, at(call.send, call.root * block), block);
  if (n == 1) return;
  std::vector<Request> requests;
  requests.reserve(static_cast<size_t>(n - 1));
  for (int to = 0; to < n; ++to) {
    if (to == call.root) continue;
    requests.push_back(Request{Request::Kind::Send, g.ranks[to], ctx.tag,
                               const_cast<char*>(at(call.send, to * block)), block});
  }
  for (auto& r : requests) ctx.router().post(r);
  ctx.router().wait(requests, ctx.scope);
}

}  // namespace smddp
