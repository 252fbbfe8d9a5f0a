// The preflight check table: one row per check with its name, scope,
// one-line summary, parameter schema and body. Profiles name rows; the YAML
// loader validates parameters against the schema; the runner calls bodies.
//
//   node checks     run once per node (on its first rank) from local state:
//                   NVML, sysfs, limits, file systems, libfabric
//   cluster checks  run by every rank together under MPI and return one
//                   result per node (on rank 0)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "preflight/params.h"
#include "preflight/report.h"
#include "shared/files.h"
#include "system/devices.h"
#include "system/nvml.h"

namespace smddp::diag {

struct NodeContext {
  SystemRoot root;
  NvmlSnapshot nvml;
  std::vector<RdmaDevice> rdma;
};

class ClusterContext;

// The largest allreduce a check runs (allreduce_busbw's bytes, isolate
// --bytes): every rank holds two such buffers.
inline constexpr uint64_t kMaxAllreduceBytes = uint64_t{4} << 30;

enum class CheckScope { Node, Cluster };

struct CheckSpec {
  std::string_view name;
  CheckScope scope;
  std::string_view summary;
  std::vector<ParamSpec> params;
  CheckResult (*node)(const NodeContext&, const Params&) = nullptr;
  // One result per node, meaningful on rank 0; every rank calls it.
  std::vector<CheckResult> (*cluster)(ClusterContext&, const Params&) = nullptr;
  // Cross-parameter checks after typing; throws UsageError(reason). May be null.
  void (*validate)(const Params&) = nullptr;
};

const std::vector<CheckSpec>& check_specs();
const CheckSpec* find_check(std::string_view name);
std::string known_check_names();  // "gpu_count, gpu_model, ..."

// Node check bodies (node_checks.cc, gpu_checks.cc).
CheckResult check_gpu_count(const NodeContext&, const Params&);
CheckResult check_gpu_model(const NodeContext&, const Params&);
CheckResult check_gpu_ecc(const NodeContext&, const Params&);
CheckResult check_gpu_memory_retirement(const NodeContext&, const Params&);
CheckResult check_gpu_temperature(const NodeContext&, const Params&);
CheckResult check_gpu_throttle(const NodeContext&, const Params&);
CheckResult check_efa_count(const NodeContext&, const Params&);
CheckResult check_memlock(const NodeContext&, const Params&);
CheckResult check_shm_size(const NodeContext&, const Params&);
CheckResult check_disk_free(const NodeContext&, const Params&);
CheckResult check_fabric_provider(const NodeContext&, const Params&);

// Cluster check bodies (cluster_checks.cc).
std::vector<CheckResult> check_rank_reachability(ClusterContext&, const Params&);
// consistency_check.cc
std::vector<CheckResult> check_consistency(ClusterContext&, const Params&);
std::vector<CheckResult> check_clock_skew(ClusterContext&, const Params&);
std::vector<CheckResult> check_allreduce_busbw(ClusterContext&, const Params&);
std::vector<CheckResult> check_link_bandwidth(ClusterContext&, const Params&);

}  // namespace smddp::diag
