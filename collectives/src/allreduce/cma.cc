// Intra-node allreduce with single-copy reads (transport/cma.h), for large
// vectors (two ranks out of place up to 2 MiB: see `replicated`): every
// rank owns a slice of the vector and
//   1. reduces it: per chunk, reads the slice's chunk straight out of every
//      peer's input into cache-resident scratch, combines all sources in
//      rank order (so every rank ends with the same bits), and writes the
//      result into its own output;
//   2. after a step boundary (no one reads inputs any more, so in-place
//      outputs may change), reads every other slice straight out of its
//      owner's output.
// Per byte of a rank's output that is one copy for the peers' share in
// step 1 and one in step 2, where staging through shared memory copies
// every input once more.
#include <vector>

#include "algorithms/catalog.h"
#include "algorithms/cma.h"
#include "algorithms/shm_steps.h"
#include "core/copy.h"
#include "smddp/reduce.h"

namespace smddp {
namespace {

constexpr size_t kChunkBytes = 128 << 10;  // per source: all of them stay in L2
constexpr size_t kReplicatedUpTo = 2 << 20;  // above, the halves win again (4 MiB: 580 us against 770)

}  // namespace

void allreduce_cma(Context& ctx, const Group&, const Call& call) {
  ShmSteps& s = *ctx.steps;
  const int n = s.size();
  const int me = s.me();
  const size_t es = call.esize();
  const auto slices = patterns::Partition::balanced(call.count, n);
  const size_t chunk = std::max<size_t>(1, kChunkBytes / es);

  // Two ranks, mid sizes, out of place: each reduces the whole vector (one
  // read of the peer's input) and the second exchange and its wait go away
  // (2 MiB: 290 us against 380). In place, our input is our output, which
  // the peer is still reading; with more ranks every rank would read all
  // inputs.
  const bool replicated = n == 2 && call.send != call.recv && call.count * es <= kReplicatedUpTo;
  s.begin(ctx.scope);
  s.expose(call.send);
  s.post();
  s.wait_posted(ctx.scope);
  // Scratch: one chunk per source, then the reduced chunk.
  char* scratch = ctx.scratch.get(ScratchSlot::Reduced, (n + 1) * chunk * es);
  char* reduced = scratch + n * chunk * es;
  std::vector<const void*> srcs(n);
  const size_t base = replicated ? 0 : slices.offset(me);
  const size_t length = replicated ? call.count : slices.length(me);
  // Reduce straight into the output unless it is streamed (large outputs
  // skip the cache) or would alias a source other than the first.
  const bool direct = call.count * es < kStreamingOutputBytes && (call.send != call.recv || me == 0);
  for (size_t off = 0; off < length; off += chunk) {
    const size_t c = std::min(chunk, length - off);
    const size_t at_bytes = (base + off) * es;
    for (int p = 0; p < n; ++p) {
      if (p == me) {
        srcs[p] = at(call.send, at_bytes);
        continue;
      }
      char* tmp = scratch + p * chunk * es;
      cma::read(ctx, p, tmp, at(s.exposed(p), at_bytes), c * es);
      srcs[p] = tmp;
    }
    void* out = at(call.recv, at_bytes);
    if (direct) {
      reduce(out, srcs.data(), n, c, call.dtype, call.op);
    } else {
      reduce(reduced, srcs.data(), n, c, call.dtype, call.op);
      copy_out(out, reduced, c * es, call.count * es);
    }
  }
  s.finish();
  if (replicated) {
    s.wait_finished(ctx.scope);  // peers are done with our input
    return;
  }

  s.begin(ctx.scope);  // every peer is past step 1 once it posts here
  s.expose(call.recv);
  s.post();
  s.wait_posted(ctx.scope);
  for (int i = 1; i < n; ++i) {
    const int p = (me + i) % n;
    const size_t o = slices.offset(p) * es;
    cma::read(ctx, p, at(call.recv, o), at(s.exposed(p), o), slices.length(p) * es);
  }
  s.finish();
  s.wait_finished(ctx.scope);  // peers are done with our output
}

}  // namespace smddp
