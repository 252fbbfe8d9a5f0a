// Where a Topology comes from: this host (hwloc discovery, NVML, sysfs), a
// saved hwloc XML file, or NCCL's topology XML. The file loaders throw
// smddp::UsageError (one line naming the file) for unreadable or malformed input.
#pragma once

#include <string>

#include "shared/files.h"
#include "topo/model.h"

namespace smddp::diag {

// hwloc discovery of this host, with GPU names and memory from NVML and
// RDMA/network devices from sysfs (under `root`) merged in by PCI bus id.
Topology discover_host(const SystemRoot& root, const std::string& nvml_library);

Topology load_hwloc_xml(const std::string& path);
Topology load_nccl_xml(const std::string& path);

}  // namespace smddp::diag
