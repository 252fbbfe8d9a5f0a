#include "system/proc_stats.h"

#include <sstream>
#include <string>

namespace smddp::diag {

std::optional<CpuTimes> read_cpu_times(const SystemRoot& root) {
  auto text = read_file(root.path("/proc/stat"));
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  std::string label;
  in >> label;
  if (label != "cpu") return std::nullopt;
  // user nice system idle iowait irq softirq steal (guest time is inside user).
  uint64_t v[8] = {};
  int n = 0;
  while (n < 8 && in >> v[n]) ++n;
  if (n < 4) return std::nullopt;
  CpuTimes t;
  for (int i = 0; i < n; ++i) t.total += v[i];
  uint64_t idle = v[3] + (n > 4 ? v[4] : 0);
  t.busy = t.total - idle;
  return t;
}

std::optional<double> cpu_utilization(const CpuTimes& before, const CpuTimes& after) {
  if (after.total <= before.total || after.busy < before.busy) return std::nullopt;
  double ratio = static_cast<double>(after.busy - before.busy) / static_cast<double>(after.total - before.total);
  return ratio > 1.0 ? 1.0 : ratio;
}

std::optional<MemoryInfo> read_memory_info(const SystemRoot& root) {
  auto text = read_file(root.path("/proc/meminfo"));
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  std::string key, unit;
  uint64_t value = 0;
  MemoryInfo m;
  bool total = false, available = false;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    if (!(l >> key >> value)) continue;
    l >> unit;
    uint64_t bytes = unit == "kB" ? value * 1024 : value;
    if (key == "MemTotal:") {
      m.total_bytes = bytes;
      total = true;
    } else if (key == "MemAvailable:") {
      m.available_bytes = bytes;
      available = true;
    }
  }
  if (!total || !available) return std::nullopt;
  return m;
}

}  // namespace smddp::diag
