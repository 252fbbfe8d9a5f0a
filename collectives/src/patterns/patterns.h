// Pure rank arithmetic, no I/O: ring neighbours, block partitions,
// halving-doubling partners, binomial trees. Ranks here are indices within a
// group (0..n-1).
#pragma once

#include <cstddef>
#include <vector>

namespace smddp::patterns {

int ring_next(int me, int n);
int ring_prev(int me, int n);
int mod(int a, int n);  // a mod n in [0, n), also for negative a

// Largest power of two <= n (n >= 1).
int pow2_floor(int n);
bool is_pow2(int n);

// A split of `total` elements into `parts` blocks. Balanced blocks differ by
// at most one element, the first total % parts blocks being the longer ones;
// equal blocks all have `total / parts` elements.
struct Partition {
  size_t total = 0;
  int parts = 1;

  static Partition balanced(size_t total, int parts) { return {total, parts}; }
  static Partition equal(size_t block, int parts) { return {block * parts, parts}; }

  size_t offset(int i) const;
  size_t length(int i) const;
  size_t max_length() const { return length(0); }
};

// Halving-doubling with the non-power-of-two fix-up (Rabenseifner): the
// first 2*extra ranks pair up, even ranks hand their data to the odd one and
// sit out; the remaining p = pow2_floor(n) ranks run the power-of-two
// exchange under "virtual" ranks 0..p-1.
//
// The halving runs over the partner distances (masks) in `masks` order, the
// doubling in reverse. The first halving moves half the vector, the last
// 1/p of it, so the distances whose partners share a node come first: with
// `node_of` (node id by rank; empty: all apart), masks pairing more ranks on
// one node go earlier, ties larger mask first. With node-mates at adjacent
// ranks that is Open MPI's and MPICH's order (mask 1 first): on H nodes of
// L ranks each rank sends (H-1)/(HL) of the vector between nodes per phase,
// not (H-1)/H.
struct HalvingDoubling {
  int n = 1;
  int pof2 = 1;
  int extra = 0;  // n - pof2
  std::vector<int> masks;

  explicit HalvingDoubling(int n, const std::vector<int>& node_of = {});
  // Virtual rank of `rank`, or -1 when it sits out.
  int virtual_rank(int rank) const;
  // Real rank of virtual rank v.
  int real_rank(int v) const;
  // The fix-up partner of a rank < 2*extra.
  int fixup_partner(int rank) const { return rank ^ 1; }
  // Reduce-scatter's ownership: virtual rank v ends with the rank blocks
  // [first_block(v), first_block(v + 1)): its real rank's, and below it
  // that of its partner that sat out (v < extra). v = pof2 gives n.
  int first_block(int v) const { return v < extra ? 2 * v : v + extra; }
  // Recursive halving's step at `mask`, the masks in `done` behind it: the
  // virtual ranks whose blocks v still holds, on its side of the mask
  // (keep) and on its partner's (give), ascending.
  void split(int v, int done, int mask, std::vector<int>& keep, std::vector<int>& give) const;
  bool sits_out(int rank) const { return rank < 2 * extra && rank % 2 == 0; }
};

// Binomial tree rooted at `root`: parent (-1 at the root) and children in the
// order a broadcast sends to them (farthest subtree first).
struct BinomialTree {
  int parent = -1;
  std::vector<int> children;
};
BinomialTree binomial_tree(int me, int root, int n);

// Pipelined chain (broadcast/chain.cc): the group's indices in the order
// the data flows, the root first, then its node-mates, then each other
// node's ranks together (node ids ascending), so the chain crosses each
// node boundary once. `node_of`: node id by index (empty: all apart).
std::vector<int> chain_order(int root, const std::vector<int>& node_of, int n);

// The chain's chunk in elements (>= 1): at least kChainMinChunkBytes, so a
// message's fixed cost stays small against its bytes (16 KiB: 17 us over
// the namespace cluster's veth, 131 us at 1 Gbit/s, against a socket
// message's 12 us), and otherwise small enough for kChainChunksPerHop
// chunks per hop, so the fill (n-2 chunks before the last rank gets its
// first) is at most 1/kChainChunksPerHop of the time.
inline constexpr size_t kChainMinChunkBytes = size_t{16} << 10;
inline constexpr size_t kChainChunksPerHop = 8;
size_t chain_chunk(size_t count, size_t esize, int n);

// Pairwise exchange step s (1..n-1): send to (me+s), receive from (me-s).
int pairwise_send_peer(int me, int step, int n);
int pairwise_recv_peer(int me, int step, int n);

// Dissemination barrier round k: signal me + 2^k, wait for me - 2^k.
int dissemination_rounds(int n);

}  // namespace smddp::patterns
