// The pairings of isolate's first rounds, rack-aware and seeded: pure
// functions of the live nodes, their racks and the seed, so the MPI run and
// the simulator (simulator.h) draw the same pairs.
//
// Round 0 pairs nodes inside their racks (the nodes left over, one per rack
// with an odd count, are paired across racks); round 1 pairs every node with
// one in another rack; later rounds draw further cross-rack pairings. Each
// round is a matching (a node in at most one pair), never repeats a pair of
// an earlier round where another choice exists, and sits out (odd counts)
// a node that has not sat out yet. Without racks (one rack) round 0 is a
// seeded random matching and round 1 a second, disjoint one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

namespace smddp::diag {

using NodePair = std::pair<int, int>;  // (lower, higher) node number

// The pairs of round `round` (0-based) over `live` (node numbers, ascending),
// `rack` indexed by node number; `earlier` holds the pairs of rounds
// 0..round-1 as returned, `sat_out` the nodes that sat out of them.
std::vector<NodePair> pairing_round(int round, const std::vector<int>& live, const std::vector<int>& rack, uint64_t seed,
                                    const std::set<NodePair>& earlier, const std::set<int>& sat_out);

// A deterministic generator for the seeded choices (splitmix64): the same
// numbers on every platform, unlike std::uniform_int_distribution.
class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // 0 <= r < n (n > 0).
  uint64_t below(uint64_t n) { return next() % n; }
  // [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[static_cast<size_t>(below(i))]);
  }

 private:
  uint64_t state_;
};

}  // namespace smddp::diag
