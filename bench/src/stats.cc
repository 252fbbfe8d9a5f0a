#include <algorithm>
#include <cmath>
#include <numeric>

#include "results.h"

namespace smddp::bench {

IterationStats compute_stats(std::vector<double> t) {
  IterationStats s;
  if (t.empty()) return s;
  std::sort(t.begin(), t.end());
  // Nearest-rank percentiles: the value at or above the fraction of samples.
  auto pct = [&](double p) {
    size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(t.size())));
    return t[std::min(t.size() - 1, rank == 0 ? 0 : rank - 1)];
  };
  s.min_us = t.front();
  s.max_us = t.back();
  s.p50_us = pct(0.50);
  s.p95_us = pct(0.95);
  s.p99_us = pct(0.99);
  s.mean_us = std::accumulate(t.begin(), t.end(), 0.0) / static_cast<double>(t.size());
  double var = 0;
  for (double x : t) var += (x - s.mean_us) * (x - s.mean_us);
  var /= static_cast<double>(t.size());
  s.cv = s.mean_us > 0 ? std::sqrt(var) / s.mean_us : 0;
  return s;
}

}  // namespace smddp::bench
