// Pipelined chain broadcast: the vector goes down a chain of the ranks
// (patterns::chain_order: node by node) in chunks, and each rank forwards
// chunk i while it receives chunk i+1. Every link carries the vector once,
// where the binomial tree puts it on the root's link log2(n) times; the
// price is n-2 chunks of fill before the last rank starts.
#include <algorithm>
#include <vector>

#include "algorithms/catalog.h"

namespace smddp {

void broadcast_chain(Context& ctx, const Group& g, const Call& call) {
  const size_t es = call.esize();
  const int n = g.size();
  const std::vector<int> order = patterns::chain_order(call.root, ctx.nodes_of(g), n);
  int pos = 0;
  while (order[pos] != g.me) ++pos;
  const int prev = pos > 0 ? order[pos - 1] : -1;
  const int next = pos + 1 < n ? order[pos + 1] : -1;
  const size_t chunk = patterns::chain_chunk(call.count, es, n);
  const size_t chunks = (call.count + chunk - 1) / chunk;
  auto bytes_of = [&](size_t i) { return std::min(chunk, call.count - i * chunk) * es; };
  // The root sends from its input (the copy into its output waits until
  // the chain is fed); the others forward what they received.
  const void* from = prev < 0 ? call.send : call.recv;
  auto offset = [&](size_t i) { return i * chunk * es; };
  for (size_t i = 0; chunks > 0 && i <= chunks; ++i) {
    const bool sends = next >= 0 && i > 0;  // chunk i-1
    const bool recvs = prev >= 0 && i < chunks;  // chunk i
    if (sends && recvs) {
      ctx.exchange(g, next, at(from, offset(i - 1)), bytes_of(i - 1), prev, at(call.recv, offset(i)), bytes_of(i));
    } else if (sends) {
      ctx.send(g, next, at(from, offset(i - 1)), bytes_of(i - 1));
    } else if (recvs) {
      ctx.recv(g, prev, at(call.recv, offset(i)), bytes_of(i));
    }
  }
  if (prev < 0) copy_if_distinct(call.recv, call.send, call.count * es);
}

}  // namespace smddp
