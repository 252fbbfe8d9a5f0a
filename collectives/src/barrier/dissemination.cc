// Dissemination barrier: in round k signal rank me + 2^k and wait for
// me - 2^k; after ceil(log2 n) rounds everyone has heard from everyone.
#include "algorithms/catalog.h"

namespace smddp {

void barrier_dissemination(Context& ctx, const Group& g, const Call&) {
  const int n = g.size();
  char out = 1, in = 0;
  for (int d = 1; d < n; d <<= 1) {
    ctx.exchange(g, patterns::mod(g.me + d, n), &out, 1, patterns::mod(g.me - d, n), &in, 1);
  }
}

}  // namespace smddp
