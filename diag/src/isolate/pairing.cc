#include "isolate/pairing.h"

#include <algorithm>
#include <map>

namespace smddp::diag {

uint64_t SplitMix::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

namespace {

NodePair ordered(int a, int b) { return {std::min(a, b), std::max(a, b)}; }

// Racks in a seeded order, the nodes of each rack shuffled: the racks are
// contiguous blocks of the order.
std::vector<int> block_order(const std::vector<int>& live, const std::vector<int>& rack, uint64_t seed) {
  std::map<int, std::vector<int>> by_rack;
  for (int n : live) by_rack[rack.at(static_cast<size_t>(n))].push_back(n);
  std::vector<int> racks;
  for (const auto& [r, nodes] : by_rack) racks.push_back(r);
  SplitMix rng(seed);
  rng.shuffle(racks);
  std::vector<int> order;
  for (int r : racks) {
    auto& nodes = by_rack[r];
    rng.shuffle(nodes);
    order.insert(order.end(), nodes.begin(), nodes.end());
  }
  return order;
}

// Consecutive nodes of each rack; the leftovers of odd racks pair across.
std::vector<NodePair> inside(const std::vector<int>& order, const std::vector<int>& rack) {
  std::vector<NodePair> out;
  std::vector<int> left;
  for (size_t i = 0; i < order.size();) {
    size_t end = i;
    while (end < order.size() && rack[static_cast<size_t>(order[end])] == rack[static_cast<size_t>(order[i])]) ++end;
    for (; i + 1 < end; i += 2) out.push_back(ordered(order[i], order[i + 1]));
    if (i < end) left.push_back(order[i++]);
  }
  for (size_t i = 0; i + 1 < left.size(); i += 2) out.push_back(ordered(left[i], left[i + 1]));
  return out;
}

// Position k with position k + n/2: the racks are blocks of at most n/2
// nodes, so every pair crosses racks whenever no rack holds more than half
// the nodes. With an odd count the last position sits out: the order is
// rotated (racks stay contiguous around the circle) so that a node that has
// not sat out yet is last.
std::vector<NodePair> across(std::vector<int> order, const std::set<int>& sat_out) {
  const size_t n = order.size();
  if (n % 2) {
    size_t last = n - 1;
    for (size_t back = 0; back < n; ++back) {
      if (!sat_out.count(order[n - 1 - back])) {
        last = n - 1 - back;
        break;
      }
    }
    std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>((last + 1) % n), order.end());
  }
  std::vector<NodePair> out;
  const size_t h = n / 2;
  for (size_t k = 0; k < h; ++k) out.push_back(ordered(order[k], order[k + h]));
  return out;
}

// A pair met in an earlier round swaps a partner with another pair of this
// round, where both new pairs are new and cross racks as the old ones did.
void avoid_repeats(std::vector<NodePair>& pairs, const std::vector<int>& rack, const std::set<NodePair>& earlier) {
  auto r = [&](int node) { return rack[static_cast<size_t>(node)]; };
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (!earlier.count(pairs[i])) continue;
    for (size_t step = 1; step < pairs.size(); ++step) {
      const size_t j = (i + step) % pairs.size();
      const auto [a, b] = pairs[i];
      const auto [c, d] = pairs[j];
      const bool crossed = r(a) != r(b) && r(c) != r(d);
      const NodePair x = ordered(a, d), y = ordered(c, b);
      if (earlier.count(x) || earlier.count(y)) continue;
      if (crossed && (r(a) == r(d) || r(c) == r(b))) continue;
      pairs[i] = x;
      pairs[j] = y;
      break;
    }
  }
}

}  // namespace

std::vector<NodePair> pairing_round(int round, const std::vector<int>& live, const std::vector<int>& rack, uint64_t seed,
                                    const std::set<NodePair>& earlier, const std::set<int>& sat_out) {
  if (live.size() < 2) return {};
  // Rounds 0 and 1 share one order (round 1 then never repeats a pair of
  // round 0 without racks either); later rounds draw a fresh one.
  const uint64_t s = round <= 1 ? seed : seed ^ (0xD1B54A32D192ED03ull * static_cast<uint64_t>(round));
  const std::vector<int> order = block_order(live, rack, s);
  std::vector<NodePair> out = round == 0 ? inside(order, rack) : across(order, sat_out);
  avoid_repeats(out, rack, earlier);
  return out;
}

}  // namespace smddp::diag
