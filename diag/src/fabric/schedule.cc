#include "fabric/schedule.h"

#include <algorithm>

namespace smddp::diag {

std::vector<Round> all_pairs_schedule(int nranks) {
  std::vector<Round> rounds;
  if (nranks < 2) return rounds;
  // Circle method: slot 0 stays, the others rotate by one each round. An odd
  // count gets a phantom rank m-1 = nranks whose partner rests.
  const int m = nranks % 2 == 0 ? nranks : nranks + 1;
  std::vector<int> circle(static_cast<size_t>(m));
  for (int i = 0; i < m; ++i) circle[static_cast<size_t>(i)] = i;
  for (int r = 0; r < m - 1; ++r) {
    Round round;
    for (int i = 0; i < m / 2; ++i) {
      int a = circle[static_cast<size_t>(i)], b = circle[static_cast<size_t>(m - 1 - i)];
      if (a >= nranks || b >= nranks) continue;
      round.emplace_back(std::min(a, b), std::max(a, b));
    }
    std::sort(round.begin(), round.end());
    rounds.push_back(std::move(round));
    std::rotate(circle.begin() + 1, circle.end() - 1, circle.end());
  }
  return rounds;
}

std::vector<Round> sampled_schedule(int nranks, int max_rounds) {
  std::vector<Round> all = all_pairs_schedule(nranks);
  if (max_rounds <= 0 || static_cast<int>(all.size()) <= max_rounds) return all;
  std::vector<Round> picked;
  for (int k = 0; k < max_rounds; ++k) {
    size_t index = static_cast<size_t>(k) * all.size() / static_cast<size_t>(max_rounds);
    picked.push_back(all[index]);
  }
  return picked;
}

}  // namespace smddp::diag
