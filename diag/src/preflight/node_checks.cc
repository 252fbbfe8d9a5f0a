// Node checks outside the GPUs: EFA devices, limits, file systems, libfabric.
#include <sys/resource.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <cstring>
#include <fmt/format.h>

#include "fabric/providers.h"
#include "preflight/checks.h"
#include "shared/text.h"

namespace smddp::diag {

CheckResult check_efa_count(const NodeContext& ctx, const Params& p) {
  const std::optional<int64_t> wanted = p.count("expected");
  const bool require_active = p.boolean("require_active");
  std::vector<std::string> names, inactive;
  for (const auto& d : ctx.rdma) {
    if (!d.efa) continue;
    names.push_back(d.name);
    for (const auto& port : d.ports) {
      if (port.port > 0 && port.state != "ACTIVE") {
        inactive.push_back(fmt::format("{} port {} is {}", d.name, port.port, port.state.empty() ? "in an unknown state" : port.state));
      }
    }
  }
  const int64_t found = static_cast<int64_t>(names.size());
  nlohmann::json values = {{"expected", wanted ? nlohmann::json(*wanted) : nlohmann::json("any")}, {"found", found}, {"devices", names}};
  if (!wanted) {
    if (require_active && !inactive.empty()) return CheckResult::fail("efa_count", join(inactive, "; "), values);
    return CheckResult::pass("efa_count", fmt::format("{} EFA devices; any count is accepted", found), values);
  }
  const int64_t expected = *wanted;
  if (found != expected) {
    std::string where = found == 0 ? fmt::format(" (no EFA device under {})", ctx.root.path("/sys/class/infiniband")) : ": " + join(names, ", ");
    return CheckResult::fail("efa_count", fmt::format("expected {} EFA devices, found {}{}", expected, found, where), values);
  }
  if (require_active && !inactive.empty()) return CheckResult::fail("efa_count", join(inactive, "; "), values);
  if (found == 0) return CheckResult::pass("efa_count", "0 EFA devices, as expected", values);
  return CheckResult::pass("efa_count", fmt::format("{} EFA devices{}", found, require_active ? ", ports active" : ""), values);
}

CheckResult check_memlock(const NodeContext&, const Params& p) {
  rlimit lim{};
  if (getrlimit(RLIMIT_MEMLOCK, &lim) != 0) return CheckResult::fail("memlock", std::string("getrlimit: ") + std::strerror(errno));
  const auto min = p.size("min");  // nullopt: unlimited
  const bool unlimited = lim.rlim_cur == RLIM_INFINITY;
  const std::string have = unlimited ? "unlimited" : format_bytes(lim.rlim_cur);
  nlohmann::json values = {{"limit", unlimited ? nlohmann::json("unlimited") : nlohmann::json(lim.rlim_cur)}};
  if (!min && !unlimited) {
    return CheckResult::fail("memlock", "locked-memory limit is " + have + ", the profile wants unlimited (ulimit -l unlimited)", values);
  }
  if (min && !unlimited && lim.rlim_cur < *min) {
    return CheckResult::fail("memlock", fmt::format("locked-memory limit is {} (min {})", have, format_bytes(*min)), values);
  }
  return CheckResult::pass("memlock", "locked-memory limit " + have, values);
}

namespace {

CheckResult file_system(const std::string& check, const std::string& path, uint64_t min, bool free_space) {
  struct statvfs s {};
  if (statvfs(path.c_str(), &s) != 0) return CheckResult::fail(check, fmt::format("cannot stat {}: {}", path, std::strerror(errno)));
  const uint64_t bytes = free_space ? uint64_t(s.f_bavail) * s.f_frsize : uint64_t(s.f_blocks) * s.f_frsize;
  const char* what = free_space ? "free" : "in size";
  nlohmann::json values = {{"path", path}, {"bytes", bytes}, {"min_bytes", min}};
  if (bytes < min) return CheckResult::fail(check, fmt::format("{} has {} {} (min {})", path, format_bytes(bytes), what, format_bytes(min)), values);
  return CheckResult::pass(check, fmt::format("{} has {} {}", path, format_bytes(bytes), what), values);
}

}  // namespace

CheckResult check_shm_size(const NodeContext&, const Params& p) {
  return file_system("shm_size", p.string("path"), p.size("min").value_or(0), false);
}

CheckResult check_disk_free(const NodeContext&, const Params& p) {
  return file_system("disk_free", p.string("path"), p.size("min").value_or(0), true);
}

CheckResult check_fabric_provider(const NodeContext&, const Params& p) {
  const std::string& provider = p.string("provider");
  std::string error;
  auto infos = query_providers(provider, true, &error);
  if (infos.empty()) {
    const auto available = available_providers();
    std::string msg = fmt::format("libfabric provider {} has no RDM endpoint here ({}); available: {}", provider, error,
                                  available.empty() ? "none" : join(available, ", "));
    // libfabric lists only the providers FI_PROVIDER names: say so, or the empty list makes no sense.
    if (const char* filter = std::getenv("FI_PROVIDER"); filter && *filter) {
      msg += fmt::format(" (FI_PROVIDER={} limits libfabric to those providers)", filter);
    }
    return CheckResult::fail("fabric_provider", msg);
  }
  return CheckResult::pass("fabric_provider", fmt::format("{} on {} (domain {})", infos[0].provider, infos[0].fabric, infos[0].domain),
                           {{"provider", infos[0].provider}, {"domains", infos.size()}});
}

}  // namespace smddp::diag
