// The algorithm registry: one row per algorithm, as data. An algorithm may
// decline a call (accepts() returns the reason); the selector then takes the
// next candidate. Accept rules read a CallShape, which a live call gives
// (shape_of) and a modelled one builds from a topology alone (smddp/schedule.h),
// so the engine and the schedules ask the same rules.
#pragma once

#include <span>
#include <string_view>

#include "algorithms/context.h"
#include "smddp/algorithms.h"

namespace smddp {

// What accept rules and the selector key on: the call and its group, without
// buffers or a communicator.
struct CallShape {
  Collective collective = Collective::AllReduce;
  GroupKind group = GroupKind::World;
  int group_size = 1;
  int nodes = 1;               // nodes of the communicator
  int ranks_per_node = 1;      // ranks sharing this rank's node segment (1: no shm steps)
  bool uniform_nodes = true;   // every node has the same number of ranks
  size_t bytes = 0;            // Call::bytes(group_size)
  MemoryKind memory = MemoryKind::Host;
  bool dedicated_cores = true;  // every rank has a core (Placement::cores_to_spare)
  bool cma = false;             // node-mates may read each other's memory
  // The live call and group, for rules about the buffers themselves
  // (cuda_staged: device pointers); nullptr when modelled.
  const Call* call = nullptr;
  const Group* live_group = nullptr;
};

CallShape shape_of(const Context& ctx, const Group& g, const Call& call);

struct Algorithm {
  AlgorithmInfo info;
  // nullptr when the algorithm can run the call, else why not.
  const char* (*accepts)(const CallShape& shape);
  void (*run)(Context& ctx, const Group& g, const Call& call);
};

std::span<const Algorithm> algorithm_registry();
const Algorithm* find_algorithm(Collective c, std::string_view name);

// Shared accept rules.
const char* accepts_any(const CallShape&);
const char* accepts_node_group(const CallShape& shape);
// accepts_node_group, and node-mates may read each other's memory (cma).
const char* accepts_cma(const CallShape& shape);

}  // namespace smddp
