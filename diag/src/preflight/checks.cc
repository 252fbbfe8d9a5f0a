// The check table. Defaults are YAML text, parsed like a profile's values;
// a parameter without a default is required.
#include "preflight/checks.h"

#include <algorithm>

#include "fabric/pingpong.h"
#include "shared/text.h"
#include "smddp/common/numbers.h"
#include "smddp/error.h"

namespace smddp::diag {
namespace {

using T = ParamType;

// Upper bounds (docs/diag.md#checks): counts stay far inside an int, buffers
// inside a node's memory, waits inside common::kMaxSeconds.
constexpr double kMaxTimeout = common::kMaxSeconds;
constexpr double kMaxIterations = 1e6;
constexpr double kMaxSamples = 1e4;
constexpr double kMaxNodes = 1e5;  // all_pairs_max, rounds
constexpr double kMaxBusbwBytes = static_cast<double>(kMaxAllreduceBytes);
constexpr double kMaxLinkBytes = static_cast<double>(kMaxLinkMessageBytes);

void validate_ecc(const Params& p) {
  const std::string& c = p.string("counter");
  if (c != "volatile" && c != "aggregate") throw UsageError("counter must be volatile or aggregate, not '" + c + "'");
}

void validate_throttle(const Params& p) {
  for (const auto& name : p.strings("reasons")) {
    bool known = false;
    std::vector<std::string> names;
    for (const auto& r : throttle_reasons()) {
      known |= r.name == name;
      names.emplace_back(r.name);
    }
    if (!known) throw UsageError("unknown throttle reason '" + name + "' (known: " + join(names, ", ") + ")");
  }
}

void validate_provider(const Params& p) {
  if (p.string("provider").empty()) throw UsageError("provider must not be empty");
}

void validate_consistency(const Params& p) {
  if (p.string("nccl_library").empty()) throw UsageError("nccl_library must not be empty");
}

void validate_link(const Params& p) {
  validate_provider(p);
  double slow = p.number("max_slowdown");
  if (slow > 0 && slow < 1) throw UsageError("max_slowdown must be 0 (off) or at least 1");
}

}  // namespace

const std::vector<CheckSpec>& check_specs() {
  static const std::vector<CheckSpec> specs = {
      {"gpu_count", CheckScope::Node, "NVML sees exactly the expected number of GPUs",
       {{"expected", T::CountOrAny, "", "GPUs the node must have ('any': report the count, judge nothing)"}},
       check_gpu_count, nullptr, nullptr},
      {"gpu_model", CheckScope::Node, "every GPU has the expected name and memory",
       {{"name_contains", T::String, "\"\"", "text the NVML device name must contain"},
        {"min_memory", T::Size, "0", "least memory per GPU"}},
       check_gpu_model, nullptr, nullptr},
      {"gpu_ecc", CheckScope::Node, "no more uncorrectable ECC errors than allowed",
       {{"max_uncorrectable", T::Integer, "0", "uncorrectable ECC errors allowed per GPU"},
        {"counter", T::String, "volatile", "volatile (since driver load) or aggregate (lifetime)"}},
       check_gpu_ecc, nullptr, validate_ecc},
      {"gpu_memory_retirement", CheckScope::Node, "no retired pages or row remaps pending or failed",
       {{"max_retired_pages", T::Integer, "0", "retired pages allowed per GPU (single- plus double-bit)"},
        {"fail_on_pending", T::Boolean, "true", "fail while a page retirement or row remap awaits a reset"},
        {"fail_on_remap_failure", T::Boolean, "true", "fail when row remapping failed"}},
       check_gpu_memory_retirement, nullptr, nullptr},
      {"gpu_temperature", CheckScope::Node, "every GPU is at or below the temperature limit",
       {{"max_celsius", T::Number, "", "highest GPU temperature allowed"}},
       check_gpu_temperature, nullptr, nullptr},
      {"gpu_throttle", CheckScope::Node, "no GPU is throttled for the listed reasons",
       {{"reasons", T::StringList, "[hw_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown, sw_thermal_slowdown]",
         "throttle reasons that count as unhealthy"}},
       check_gpu_throttle, nullptr, validate_throttle},
      {"efa_count", CheckScope::Node, "the expected number of EFA devices, ports active",
       {{"expected", T::CountOrAny, "", "EFA devices the node must have ('any': report the count)"},
        {"require_active", T::Boolean, "true", "every port must be ACTIVE"}},
       check_efa_count, nullptr, nullptr},
      {"memlock", CheckScope::Node, "the locked-memory limit (EFA wants unlimited)",
       {{"min", T::SizeOrUnlimited, "", "least RLIMIT_MEMLOCK, or unlimited"}},
       check_memlock, nullptr, nullptr},
      {"shm_size", CheckScope::Node, "the shared-memory file system is large enough",
       {{"path", T::String, "/dev/shm", "mount point"}, {"min", T::Size, "", "least total size"}},
       check_shm_size, nullptr, nullptr},
      {"disk_free", CheckScope::Node, "enough free disk space",
       {{"path", T::String, "/", "directory on the file system"}, {"min", T::Size, "", "least free space"}},
       check_disk_free, nullptr, nullptr},
      {"fabric_provider", CheckScope::Node, "the libfabric provider offers RDM endpoints",
       {{"provider", T::String, "", "efa, tcp, shm, ..."}},
       check_fabric_provider, nullptr, validate_provider},
      {"rank_reachability", CheckScope::Cluster, "every rank answers every other rank in time",
       {{"timeout_s", T::Number, "30", "seconds to wait for every answer", 0.001, kMaxTimeout}},
       nullptr, check_rank_reachability, nullptr},
      {"consistency", CheckScope::Cluster, "versions and NCCL_/FI_/SMDDP_/RDMAV_ settings agree across nodes and ranks (and --golden)",
       {{"timeout_s", T::Number, "30", "seconds to wait for every rank's report", 0.001, kMaxTimeout},
        {"ignore", T::StringList, "[]", "fact or setting names (globs) never compared"},
        {"nccl_library", T::String, "libnccl.so.2", "the NCCL library whose version is reported"}},
       nullptr, check_consistency, validate_consistency},
      {"clock_skew", CheckScope::Cluster, "node clocks agree with rank 0's",
       {{"max_ms", T::Number, "", "largest clock offset allowed, milliseconds"},
        {"samples", T::Integer, "8", "round trips per node (the fastest one counts)", 1, kMaxSamples},
        {"timeout_s", T::Number, "30", "seconds to wait for a node", 0.001, kMaxTimeout}},
       nullptr, check_clock_skew, nullptr},
      {"allreduce_busbw", CheckScope::Cluster, "allreduce bus bandwidth over the smddp engine",
       {{"bytes", T::Size, "64MiB", "message size", 4, kMaxBusbwBytes},
        {"iterations", T::Integer, "10", "timed iterations", 1, kMaxIterations},
        {"warmup", T::Integer, "2", "untimed iterations", 0, kMaxIterations},
        {"min_gbytes_per_s", T::Number, "", "least bus bandwidth, GB/s (1e9 bytes/s)"},
        {"timeout_s", T::Number, "120", "seconds one allreduce may take", 0.001, kMaxTimeout}},
       nullptr, check_allreduce_busbw, nullptr},
      {"link_bandwidth", CheckScope::Cluster, "pairwise node-to-node libfabric bandwidth",
       {{"provider", T::String, "", "libfabric provider"},
        {"bytes", T::Size, "4MiB", "message size", 1, kMaxLinkBytes},
        {"window", T::Integer, "16", "messages in flight", 1, 128},
        {"iterations", T::Integer, "4", "timed windows per pair", 1, kMaxIterations},
        {"min_gbytes_per_s", T::Number, "0", "least bandwidth per link, GB/s (0: off)"},
        {"max_slowdown", T::Number, "2", "flag links this many times below the median (0: off)"},
        {"all_pairs_max", T::Integer, "32", "test every pair up to this many nodes", 2, kMaxNodes},
        {"rounds", T::Integer, "8", "rounds of disjoint pairs above that", 1, kMaxNodes},
        {"timeout_s", T::Number, "60", "seconds any single wait may take", 0.001, kMaxTimeout}},
       nullptr, check_link_bandwidth, validate_link},
  };
  return specs;
}

const CheckSpec* find_check(std::string_view name) {
  for (const auto& s : check_specs()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string known_check_names() {
  std::vector<std::string> names;
  for (const auto& s : check_specs()) names.emplace_back(s.name);
  return join(names, ", ");
}

}  // namespace smddp::diag
