#include "patterns/patterns.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace smddp::patterns {

int mod(int a, int n) { return ((a % n) + n) % n; }
int ring_next(int me, int n) { return mod(me + 1, n); }
int ring_prev(int me, int n) { return mod(me - 1, n); }

int pow2_floor(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}
bool is_pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

size_t Partition::offset(int i) const {
  size_t base = total / parts;
  size_t rem = total % parts;
  size_t ii = static_cast<size_t>(i);
  return ii * base + (ii < rem ? ii : rem);
}

size_t Partition::length(int i) const {
  size_t base = total / parts;
  size_t rem = total % parts;
  return base + (static_cast<size_t>(i) < rem ? 1 : 0);
}

HalvingDoubling::HalvingDoubling(int n_, const std::vector<int>& node_of)
    : n(n_), pof2(pow2_floor(n_)), extra(n_ - pow2_floor(n_)) {
  std::vector<std::pair<int, int>> by_locality;  // (-pairs on one node, -mask)
  for (int mask = pof2 / 2; mask >= 1; mask /= 2) {
    int local = 0;
    for (int v = 0; v < pof2 && !node_of.empty(); ++v) {
      local += node_of[real_rank(v)] == node_of[real_rank(v ^ mask)];
    }
    by_locality.emplace_back(-local, -mask);
  }
  std::sort(by_locality.begin(), by_locality.end());
  for (const auto& [local, mask] : by_locality) masks.push_back(-mask);
}

int HalvingDoubling::virtual_rank(int rank) const {
  if (rank < 2 * extra) return rank % 2 == 0 ? -1 : rank / 2;
  return rank - extra;
}

int HalvingDoubling::real_rank(int v) const { return v < extra ? 2 * v + 1 : v + extra; }

void HalvingDoubling::split(int v, int done, int mask, std::vector<int>& keep, std::vector<int>& give) const {
  keep.clear();
  give.clear();
  for (int w = 0; w < pof2; ++w) {
    if ((w & done) == (v & done)) ((w & mask) == (v & mask) ? keep : give).push_back(w);
  }
}

BinomialTree binomial_tree(int me, int root, int n) {
  BinomialTree t;
  int vr = mod(me - root, n);
  int mask = 1;
  while (mask < n) {
    if (vr & mask) {
      t.parent = mod(vr - mask + root, n);
      break;
    }
    mask <<= 1;
  }
  // Children are vr + m for m below the lowest set bit (all m < n at the root).
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (vr + mask < n) t.children.push_back(mod(vr + mask + root, n));
  }
  return t;
}

std::vector<int> chain_order(int root, const std::vector<int>& node_of, int n) {
  auto node = [&](int i) { return node_of.empty() ? i : node_of[i]; };
  // Key: (not on the root's node, node id, not the root, index).
  auto key = [&](int i) { return std::make_tuple(node(i) != node(root), node(i), i != root, i); };
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });
  return order;
}

size_t chain_chunk(size_t count, size_t esize, int n) {
  const size_t floor = (kChainMinChunkBytes + esize - 1) / esize;
  const size_t per_hop = kChainChunksPerHop * static_cast<size_t>(std::max(n - 1, 1));
  return std::max<size_t>({floor, (count + per_hop - 1) / per_hop, 1});
}

int pairwise_send_peer(int me, int step, int n) { return mod(me + step, n); }
int pairwise_recv_peer(int me, int step, int n) { return mod(me - step, n); }

int dissemination_rounds(int n) {
  int rounds = 0;
  for (int d = 1; d < n; d <<= 1) ++rounds;
  return rounds;
}

}  // namespace smddp::patterns
