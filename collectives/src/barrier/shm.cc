// Intra-node barrier: one step of the shm protocol with nothing staged.
#include "algorithms/catalog.h"
#include "algorithms/shm_steps.h"

namespace smddp {

void barrier_shm(Context& ctx, const Group&, const Call&) {
  ShmSteps& s = *ctx.steps;
  s.begin(ctx.scope);
  s.post();
  s.wait_posted(ctx.scope);
  s.finish();
}

}  // namespace smddp
