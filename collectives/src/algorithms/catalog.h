// Entry points of every algorithm, one file each under <collective>/.
// registry.cc puts them in the table with their descriptions.
#pragma once

#include "algorithms/context.h"
#include "algorithms/registry.h"

namespace smddp {

#define SMDDP_ALGORITHM(fn) void fn(Context& ctx, const Group& g, const Call& call)
#define SMDDP_ACCEPTS(fn) const char* fn(const CallShape& shape)

SMDDP_ALGORITHM(allreduce_shm_direct);
SMDDP_ALGORITHM(allreduce_ring);
SMDDP_ALGORITHM(allreduce_halving_doubling);
SMDDP_ALGORITHM(allreduce_recursive_doubling);
SMDDP_ALGORITHM(allreduce_tree);
SMDDP_ALGORITHM(allreduce_hierarchical);
SMDDP_ACCEPTS(allreduce_hierarchical_accepts);
SMDDP_ALGORITHM(allreduce_sharded);
SMDDP_ACCEPTS(allreduce_sharded_accepts);
SMDDP_ALGORITHM(allreduce_cma);

SMDDP_ALGORITHM(allgather_shm_direct);
SMDDP_ALGORITHM(allgather_ring);
SMDDP_ALGORITHM(allgather_recursive_doubling);
SMDDP_ACCEPTS(allgather_recursive_doubling_accepts);
SMDDP_ALGORITHM(allgather_direct);
SMDDP_ALGORITHM(allgather_cma);

SMDDP_ALGORITHM(reduce_scatter_shm_direct);
SMDDP_ALGORITHM(reduce_scatter_ring);
SMDDP_ALGORITHM(reduce_scatter_recursive_halving);

SMDDP_ALGORITHM(broadcast_shm_direct);
SMDDP_ALGORITHM(broadcast_tree);
SMDDP_ALGORITHM(broadcast_chain);
SMDDP_ALGORITHM(broadcast_cma);

SMDDP_ALGORITHM(reduce_shm_direct);
SMDDP_ALGORITHM(reduce_tree);

SMDDP_ALGORITHM(alltoall_shm_direct);
SMDDP_ALGORITHM(alltoall_pairwise);
SMDDP_ALGORITHM(alltoall_cma);

SMDDP_ALGORITHM(gather_direct);
SMDDP_ALGORITHM(scatter_direct);
SMDDP_ALGORITHM(sendrecv_ring);
SMDDP_ALGORITHM(alltoallv_pairwise);

SMDDP_ALGORITHM(barrier_shm);
SMDDP_ALGORITHM(barrier_dissemination);

#if SMDDP_CUDA_ENABLED
// Device buffers, every collective but the barrier (cuda/staged.cc).
SMDDP_ALGORITHM(cuda_staged);
SMDDP_ACCEPTS(cuda_staged_accepts);
#endif

}  // namespace smddp
