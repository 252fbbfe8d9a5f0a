// Single-copy reads from a node-mate's memory (Linux cross-memory attach,
// process_vm_readv): a rank copies a peer's buffer straight into its own,
// one copy where staging through shared memory takes two.
//
// Not every node allows it: Yama (ptrace_scope 1, Ubuntu's default) permits
// only a declared tracer, and container seccomp profiles often refuse the
// call. probe_cma() declares every process a permitted reader of this one
// (PR_SET_PTRACER_ANY, as Open MPI's vader does; same-user processes only,
// the kernel's ptrace rules still apply), then reads a word from every
// node-mate and writes the same value back (process_vm_writev); the answer
// is the same on every rank of the node, so every rank picks the same
// algorithm. SMDDP_CMA=0 turns it off.
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "bootstrap/bootstrap.h"

namespace smddp {

// Collective over the bootstrap (every rank calls it). True when every rank
// of this node can read every other's memory.
bool probe_cma(Bootstrap& bootstrap, const Topology& topo);

// Copies `bytes` from `remote` in process `pid` to `local`. Throws
// TransportError naming the peer when the kernel refuses or falls short.
void cma_read(pid_t pid, void* local, const void* remote, size_t bytes, int peer_rank, const Topology& topo);

// Copies `bytes` from `local` to `remote` in process `pid`
// (process_vm_writev; the probe checks that writes are allowed too).
void cma_write(pid_t pid, void* remote, const void* local, size_t bytes, int peer_rank, const Topology& topo);

}  // namespace smddp
