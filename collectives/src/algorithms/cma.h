// Helpers of the single-copy (cma) algorithms: inside a node, a rank
// exposes its buffer's address through the shm steps and peers copy from it
// straight into their own buffers (transport/cma.h). One copy per byte
// where staging through the shared segment takes two, and no chunking: the
// kernel copies the whole block in one call.
#pragma once

#include "algorithms/context.h"
#include "transports/cma.h"

namespace smddp::cma {

// Copies `bytes` at `remote` in local rank `local`'s memory to `local_buf`.
inline void read(const Context& ctx, int local, void* local_buf, const void* remote, size_t bytes) {
  if (bytes == 0) return;
  const int rank = ctx.topo.node_ranks[ctx.topo.node][local];
  cma_read(static_cast<pid_t>(ctx.topo.pids[rank]), local_buf, remote, bytes, rank, ctx.topo);
}

// Copies `bytes` at `local_buf` to `remote` in local rank `local`'s memory.
inline void write(const Context& ctx, int local, void* remote, const void* local_buf, size_t bytes) {
  if (bytes == 0) return;
  const int rank = ctx.topo.node_ranks[ctx.topo.node][local];
  cma_write(static_cast<pid_t>(ctx.topo.pids[rank]), remote, local_buf, bytes, rank, ctx.topo);
}

}  // namespace smddp::cma
