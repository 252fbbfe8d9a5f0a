// Helpers shared by the shm-direct algorithms.
#pragma once

#include <algorithm>
#include <vector>

#include "algorithms/context.h"
#include "algorithms/shm_steps.h"

namespace smddp::shm_direct {

// Below this many bytes per step every rank reduces the whole chunk itself:
// one synchronisation instead of two, the work is negligible.
inline constexpr size_t kReplicatedReduceBytes = 4096;
// Up to this many local ranks every rank reduces whole chunks (allreduce).
inline constexpr int kReplicatedReduceRanks = 2;

// Elements of [off, off + chunk) that fall inside a block of `length`.
inline size_t piece(size_t length, size_t off, size_t chunk) {
  return off >= length ? 0 : std::min(chunk, length - off);
}

// Pointers to the same offset of every local rank's stage buffer.
inline std::vector<const void*>& stage_pointers(ShmSteps& s, size_t byte_offset) {
  thread_local std::vector<const void*> ptrs;
  ptrs.resize(s.size());
  for (int p = 0; p < s.size(); ++p) ptrs[p] = s.stage(p) + byte_offset;
  return ptrs;
}

}  // namespace smddp::shm_direct
