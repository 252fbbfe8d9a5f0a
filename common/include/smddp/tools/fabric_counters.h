// The error-like counters of the RDMA devices (EFA, mlx5, ...) under
// ROOT/sys/class/infiniband/DEV/ports/PORT/{hw_counters,counters}/NAME and
// the device-wide DEV/hw_counters/NAME (port 0): retransmits, drops, link
// downs, impaired or unresponsive remotes, receive errors. Read before and
// after a piece of work, the deltas say whether the fabric misbehaved during
// it. smddp-bench attaches them to every row, smddp-diag preflight reports
// those that moved during its checks. ROOT is "/" on a real host; tests
// point it at a fake tree (SMDDP_SYSFS_ROOT).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace smddp::tools {

struct FabricCounterKey {
  std::string device;  // "rdmap16s27", "mlx5_0"
  int port = 0;        // 0: a device-wide counter
  std::string name;    // "retrans_pkts"
  auto operator<=>(const FabricCounterKey&) const = default;
};

using FabricCounterSnapshot = std::map<FabricCounterKey, uint64_t>;

struct FabricCounterDelta {
  FabricCounterKey key;
  uint64_t delta = 0;
};

// True for the counters worth watching: the names in docs/diag.md
// ("Fabric counters"), by the words they carry (retrans, drop, discard, err,
// timeout, impaired, unresponsive, link_down, out_of_sequence, ...).
bool is_fabric_error_counter(std::string_view name);

// Every error-like counter under `root` ("" or "/": the real system). An
// absent tree (no RDMA device) gives an empty snapshot; unreadable or
// non-numeric files are skipped.
FabricCounterSnapshot read_fabric_counters(const std::string& root);

// Counters that grew from `before` to `after`, in key order. A counter that
// went down (a reset, a device that came back) counts from zero: its new value.
std::vector<FabricCounterDelta> fabric_counter_deltas(const FabricCounterSnapshot& before,
                                                      const FabricCounterSnapshot& after);

// "rdmap16s27/1/retrans_pkts" (port 0: "rdmap16s27/retrans_pkts").
std::string to_string(const FabricCounterKey& key);

}  // namespace smddp::tools
