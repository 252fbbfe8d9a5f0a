// Host CPU and memory figures from /proc (under SystemRoot).
#pragma once

#include <cstdint>
#include <optional>

#include "shared/files.h"

namespace smddp::diag {

struct CpuTimes {
  uint64_t busy = 0, total = 0;  // jiffies since boot over all CPUs
};
// The aggregate "cpu" line of /proc/stat; nullopt when unreadable.
std::optional<CpuTimes> read_cpu_times(const SystemRoot& root);
// Busy share of the time between two readings, 0..1; nullopt when no time passed.
std::optional<double> cpu_utilization(const CpuTimes& before, const CpuTimes& after);

struct MemoryInfo {
  uint64_t total_bytes = 0, available_bytes = 0;
  uint64_t used_bytes() const { return total_bytes > available_bytes ? total_bytes - available_bytes : 0; }
};
// MemTotal and MemAvailable from /proc/meminfo.
std::optional<MemoryInfo> read_memory_info(const SystemRoot& root);

}  // namespace smddp::diag
