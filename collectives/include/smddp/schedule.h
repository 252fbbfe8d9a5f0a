// The step schedule of an algorithm, as data: what each step moves, over
// which tier, with how many flows sharing a link. Drawn from the same rank
// arithmetic the algorithms run (patterns/), without running them: for cost
// models (smddp-model) and for reading what an algorithm does at a scale
// this machine does not have.
//
// Ranks are placed host-major, as mpirun's default by-slot mapping does:
// world rank r runs on host r / ranks_per_host, with the same number of
// ranks on every host. Buffers are out of place.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "smddp/types.h"

namespace smddp::schedule {

enum class Tier : uint8_t { Shm, Network };
std::string_view to_string(Tier t);  // "shm", "network"

struct Topology {
  int hosts = 1;
  int ranks_per_host = 1;
  int ranks() const { return hosts * ranks_per_host; }
};

// One step: every rank starts it once the previous one is done (a step is
// as slow as its busiest rank). Figures are the busiest rank's.
struct Step {
  Tier tier = Tier::Shm;   // Network when any transfer of the step crosses hosts
  uint64_t bytes = 0;      // bytes a rank sends in the step's tier (shm: copies through shared memory)
  uint64_t messages = 0;   // messages (shm: synchronised copies) a rank sends in that tier
  uint64_t reduced = 0;    // incoming bytes a rank combines into its own
  // Concurrent flows on the busiest link: the bytes that cross one host's
  // network link (out or in) in this step over `bytes` (network), or the
  // ranks of a host copying at once (shm). K ranks of a host all crossing
  // give K; a root receiving from n-1 remote ranks gives n-1 (incast).
  // A ratio, not rounded up: shards one element apart (3 ranks) make a
  // link carry a few bytes more than a rank sends, which is not 2 flows.
  double flows = 1;
  std::string phase;       // "reduce_scatter ring", "cross allreduce halving_doubling", ...
  // The step runs this many times in a row. Only the cost model's proxies
  // at scale (Options::cut_as_ranks) draw a run of alike steps once: the
  // chain's steady state; every other schedule lists each step (1).
  uint64_t repeat = 1;
};

struct Schedule {
  std::string algorithm;   // the one that runs ("auto" resolved)
  std::string declined;    // why it cannot run this call (then no steps)
  std::vector<Step> steps;
};

struct Options {
  uint64_t shm_slot_bytes = 1 << 20;  // SMDDP_SHM_SLOT_BYTES' default: shm_direct's chunk
  bool dedicated_cores = true;        // every rank has a core (selector rows that need it)
  bool cma = true;                    // cross-memory attach allowed (SMDDP_CMA)
  // > 0: this is a smaller proxy of a group of that many ranks (the cost
  // model's proxies at scale): cuts the engine makes by the group's size
  // (the chain's chunk) are made as for that group, and the chain's steady
  // steps, alike, are one Step repeated.
  int cut_as_ranks = 0;
};

// One transfer a step is summarised from, in world ranks: `messages`
// messages of `bytes` in all from src to dst.
struct Transfer {
  size_t step = 0;  // index into Schedule::steps
  int src = 0, dst = 0;
  uint64_t bytes = 0;
  uint64_t messages = 1;
};

// The schedule of `algorithm` ("auto": the choice of the selector's data
// rows, what the engine takes without a model) for a call of the row size
// `bytes` (the larger buffer, as smddp-bench's rows) of elements of
// `dtype_size` bytes. Nested steps (the node and cross-node phases of
// hierarchical and sharded) take the same rows' choice. The engine's
// selector draws these schedules to rank algorithms with its cost model,
// with its own choices nested (docs/engine.md, "Algorithms and selection"). Throws UsageError for an unknown collective/algorithm
// pair, a topology without ranks or a zero dtype size. Whether an algorithm
// accepts the call, and which one "auto" and the nested steps take, the
// engine's own registry and selector decide. `transfers`, when given,
// receives every transfer of every step (none for the shared-memory
// algorithms, whose steps are chunk copies): for checking a schedule
// against a real run (tests/unit/schedule_transfers_test.cc); it grows as
// steps x ranks.
Schedule make(Collective c, std::string_view algorithm, const Topology& topo, uint64_t bytes,
              size_t dtype_size, const Options& options = {}, std::vector<Transfer>* transfers = nullptr);

// The host algorithms of a collective that make() knows, in registry order.
std::vector<std::string> algorithms(Collective c);

}  // namespace smddp::schedule
