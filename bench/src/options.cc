#include "options.h"

#include <cmath>

#include "smddp/error.h"

namespace smddp::bench {

std::vector<size_t> sweep_sizes(const BenchOptions& o) {
  std::vector<size_t> sizes;
  for (size_t s = o.min_bytes; s <= o.max_bytes;) {
    sizes.push_back(s);
    size_t next = o.step_bytes > 0 ? s + o.step_bytes
                                   : static_cast<size_t>(std::ceil(static_cast<double>(s) * o.step_factor));
    if (next <= s) break;  // overflow or a factor that cannot grow 0
    s = next;
  }
  return sizes;
}

}  // namespace smddp::bench
