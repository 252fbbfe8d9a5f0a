// Fabric counter deltas per row: the first rank of each host reads its
// host's RDMA error counters (smddp/tools/fabric_counters.h, under
// SMDDP_SYSFS_ROOT) before and after the row; rank 0 gathers every host's
// deltas and the reporters attach them to the row (JSON "fabric_counters",
// the smddp_bench_fabric_delta_total metric).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "smddp/communicator.h"
#include "smddp/tools/fabric_counters.h"

namespace smddp::bench {

struct HostCounterDelta {
  std::string host;
  tools::FabricCounterDelta counter;
};

// What a row's fabric counters did: `read` is false when no host has an
// RDMA device (nothing to compare); `deltas` holds the counters that moved.
struct RowFabricCounters {
  bool read = false;
  std::vector<HostCounterDelta> deltas;
};

class RowCounters {
 public:
  RowCounters(Communicator& comm, const std::vector<std::string>& hosts);
  void before();
  // Collective over the communicator: every rank calls it after every row.
  // Rank 0 gets every host's deltas; the other ranks an empty result.
  RowFabricCounters after();

 private:
  Communicator& comm_;
  bool reader_ = false;  // the first rank of its host
  std::string host_, root_;
  tools::FabricCounterSnapshot before_;
};

nlohmann::json fabric_counters_to_json(const RowFabricCounters& counters);

}  // namespace smddp::bench
