#include "cli/options.h"

#include <cmath>

#include "smddp/error.h"

namespace smddp::bench {

std::vector<size_t> sweep_sizes(const BenchOptions& o) {
  std::vector<size_t> sizes;
  for (size_t s = o.min_bytes; s <= o.max_bytes;) {
    sizes.push_back(s);
    if (o.step_bytes > 0 && o.max_bytes - s < o.step_bytes) break;  // the next is past -e (or 2^64)
    const double grown = std::ceil(static_cast<double>(s) * o.step_factor);
    if (o.step_bytes == 0 && !(grown <= static_cast<double>(o.max_bytes))) break;
    const size_t next = o.step_bytes > 0 ? s + o.step_bytes : static_cast<size_t>(grown);
    if (next <= s) break;  // a factor that cannot grow 0 (refused by the command line)
    s = next;
  }
  return sizes;
}

}  // namespace smddp::bench
