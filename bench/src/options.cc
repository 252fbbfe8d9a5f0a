#include "options.h"

#include <cctype>
#include <cmath>
#include <limits>

#include "smddp/error.h"

namespace smddp::bench {

size_t parse_size(const std::string& text, const std::string& flag) {
  auto bad = [&]() -> UsageError {
    return UsageError(flag + " '" + text + "': expected a byte count like 8, 4K, 16M or 1G");
  };
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) throw bad();
  size_t pos = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &pos);
  } catch (const std::exception&) {
    throw bad();
  }
  unsigned long long scale = 1;
  std::string suffix = text.substr(pos);
  if (suffix == "K" || suffix == "k" || suffix == "KB" || suffix == "KiB") scale = 1ULL << 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MB" || suffix == "MiB") scale = 1ULL << 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GB" || suffix == "GiB") scale = 1ULL << 30;
  else if (suffix == "T" || suffix == "TB" || suffix == "TiB") scale = 1ULL << 40;
  else if (!suffix.empty() && suffix != "B") throw bad();
  if (value > std::numeric_limits<size_t>::max() / scale) throw bad();
  return static_cast<size_t>(value * scale);
}

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
