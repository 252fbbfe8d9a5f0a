// The algorithm registry: one row per algorithm, as data. An algorithm may
// decline a call (accepts() returns the reason); the selector then takes the
// next candidate.
#pragma once

#include <span>
#include <string_view>

#include "algorithms/context.h"
#include "smddp/algorithms.h"

namespace smddp {

struct Algorithm {
  AlgorithmInfo info;
  // nullptr when the algorithm can run the call, else why not.
  const char* (*accepts)(const Context& ctx, const Group& g, const Call& call);
  void (*run)(Context& ctx, const Group& g, const Call& call);
};

std::span<const Algorithm> algorithm_registry();
const Algorithm* find_algorithm(Collective c, std::string_view name);

// Shared accept rules.
const char* accepts_any(const Context&, const Group&, const Call&);
const char* accepts_node_group(const Context& ctx, const Group& g, const Call&);
// accepts_node_group, and node-mates may read each other's memory (cma).
const char* accepts_cma(const Context& ctx, const Group& g, const Call& call);

}  // namespace smddp
