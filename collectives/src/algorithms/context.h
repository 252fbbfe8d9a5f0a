// What an algorithm sees: the group it runs on, the call, point-to-point
// helpers in group indices, the node's shm steps, scratch memory, and an
// entry point to run another collective (composite algorithms never touch a
// transport directly).
//
// Vocabulary used by every algorithm file:
//   group  - the ranks taking part (world, the node, or one rank per node);
//            indices 0..n-1, `me` is ours
//   block  - the part of a buffer a rank owns in reduce-scatter/allgather
//            (patterns::Partition)
//   chunk  - the part of a block moved in one pipelined step
//   step   - one round of the shm-direct protocol (shm_steps.h)
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/placement.h"
#include "patterns/patterns.h"
#include "smddp/communicator.h"
#include "smddp/types.h"
#include "bootstrap/bootstrap.h"
#include "transports/router.h"

namespace smddp {

class ShmSteps;
class Selector;
struct Algorithm;

enum class GroupKind : uint8_t { World, Node, Cross };

struct Group {
  GroupKind kind = GroupKind::World;
  std::vector<int> ranks;  // world ranks, by group index
  int me = 0;
  int size() const { return static_cast<int>(ranks.size()); }
};

// One collective call as algorithms see it. Roots are group indices.
// Reduce-scatter: `send` holds blocks.total elements, `recv` receives block
// `me`. Allgather: `send` holds block `me`, `recv` receives all blocks.
struct Call {
  Collective collective = Collective::AllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  // allreduce/broadcast/reduce: elements; alltoall: per peer
  patterns::Partition blocks;  // reduce-scatter and allgather
  DataType dtype = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;  // never Avg here: the communicator divides
  int root = 0;
  // What selection keys on besides the size: where the buffers live and
  // how the ranks sit on their cores (the communicator's; nullptr in unit
  // tests: cores to spare). Copies for nested calls inherit both.
  MemoryKind memory = MemoryKind::Host;
  const Placement* placement = nullptr;
  const size_t* send_counts = nullptr;  // alltoallv: elements per peer, packed by peer
  const size_t* recv_counts = nullptr;

  size_t esize() const { return dtype_size(dtype); }
  // The bytes the selector keys on: the whole vector of the collective (the
  // larger buffer). alltoallv: 0, since ranks' own sums differ and every
  // rank must choose alike.
  size_t bytes(int group_size) const;
};

// Scratch memory by purpose. An algorithm that runs nested collectives
// keeps its own buffers in a slot no leaf algorithm uses, so a nested call
// cannot overwrite them.
enum class ScratchSlot : uint8_t {
  Incoming,     // leaf algorithms: data received from a peer
  Accumulator,  // leaf algorithms: partial results kept across steps
  Window,       // composite algorithms (sharded): live across nested calls
  Reduced,      // shm_direct, cma: cache-resident reduction output
  SavedInput,   // in-place calls: the input set aside before it is overwritten
};
inline constexpr int kNumScratchSlots = 5;

// Reusable aligned scratch buffers, grown on demand, kept between calls.
class Scratch {
 public:
  // Room for `count` elements of T in `slot` (4 KiB aligned).
  template <typename T = char>
  T* get(ScratchSlot slot, size_t count) {
    return static_cast<T*>(raw(slot, count * sizeof(T)));
  }

 private:
  void* raw(ScratchSlot slot, size_t bytes);
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> buffers_[kNumScratchSlots];
  size_t sizes_[kNumScratchSlots] = {};
};

class Context {
 public:
  Context(Router& router, const Topology& topo, ShmSteps* steps, const Selector& selector);

  const Topology& topo;
  ShmSteps* const steps;  // nullptr when the node has a single rank
  Group world, node, cross;
  WaitScope scope;
  int tag = 0;
  bool cma = false;  // node-mates can read each other's memory (transport/cma.h)
  const bool uniform_nodes;  // every node has the same number of ranks (accept rules)
  Scratch scratch;

  // Point-to-point in group indices. exchange() sends and receives at once.
  void exchange(const Group& g, int to, const void* sbuf, size_t sbytes, int from, void* rbuf,
                size_t rbytes);
  void send(const Group& g, int to, const void* buf, size_t bytes);
  void recv(const Group& g, int from, void* buf, size_t bytes);
  // The node of each of g's ranks, by group index (patterns' `node_of`).
  std::vector<int> nodes_of(const Group& g) const;

  // Runs a collective on a group through the selector; returns the name.
  std::string_view run(const Group& g, const Call& call, std::string_view algorithm = "auto");
  // Runs a given algorithm (resolved once by the caller); UsageError when it
  // declines the call.
  std::string_view run(const Group& g, const Call& call, const Algorithm& algorithm);

  Router& router() { return router_; }

 private:
  Router& router_;
  const Selector& selector_;
};

// Copies `bytes` unless the buffers are the same.
void copy_if_distinct(void* dst, const void* src, size_t bytes);
inline char* at(void* p, size_t bytes) { return static_cast<char*>(p) + bytes; }
inline const char* at(const void* p, size_t bytes) { return static_cast<const char*>(p) + bytes; }

}  // namespace smddp
