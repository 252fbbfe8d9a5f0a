#include "preflight/settings_advice.h"

#include <fnmatch.h>


namespace smddp::diag {
namespace {

constexpr std::string_view kOfiDoc = "https://github.com/aws/aws-ofi-nccl/blob/master/doc/efa-env-var.md";
constexpr std::string_view kNcclDoc =
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html";

bool is_glob(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

}  // namespace

const std::vector<SettingAdvice>& settings_advice() {
  using W = AdviceWhen;
  static const std::vector<SettingAdvice> rows = {
      // aws-ofi-nccl's EFA cheatsheet (doc/efa-env-var.md).
      {"RDMAV_FORK_SAFE", "*", W::Always,
       "never set it: an rdma-core variable that behaves unlike FI_EFA_FORK_SAFE and can break things on newer kernels", kOfiDoc},
      {"RDMAV_*", "*", W::Always, "rdma-core variables: do not set them for EFA", kOfiDoc},
      {"FI_EFA_FORK_SAFE", "*", W::Always,
       "not needed: the plugin sets it itself for the libfabric versions that need it (since v1.2 at least)", kOfiDoc},
      {"FI_EFA_USE_DEVICE_RDMA", "*", W::Always,
       "not needed with libfabric >= 1.18.0 and aws-ofi-nccl >= 1.7.0 (which turn GPUDirect RDMA on where the instance has it)", kOfiDoc},
      {"FI_EFA_ENABLE_SHM_TRANSFER", "*", W::Always,
       "not needed: libfabric disables SHM transfer itself when the plugin sets FI_OPT_CUDA_API_PERMITTED to false", kOfiDoc},
      {"NCCL_PROTO", "simple", W::WithOfiPlugin,
       "only for aws-ofi-nccl <= 1.5.0; newer plugins run NCCL's LL and LL128 protocols over EFA", kOfiDoc},
      {"NCCL_SOCKET_NTHREADS", "*", W::WithOfiPlugin, "not applicable for EFA (the plugin carries the traffic, not NCCL's sockets)", kOfiDoc},
      {"NCCL_NSOCKS_PERTHREAD", "*", W::WithOfiPlugin, "not applicable for EFA (the plugin carries the traffic, not NCCL's sockets)", kOfiDoc},
      {"NCCL_BUFFSIZE", "*", W::WithOfiPlugin, "leave it out to use the default", kOfiDoc},
      // NCCL's environment documentation (env.rst).
      {"NCCL_PROTO", "*", W::Always,
       "NCCL discourages setting it except to disable a protocol suspected of a bug; LL128 where the platform does not support it "
       "can corrupt data", kNcclDoc},
      {"NCCL_MIN_NCHANNELS", "*", W::Always, "deprecated in NCCL 2.17: use NCCL_MIN_CTAS", kNcclDoc},
      {"NCCL_MAX_NCHANNELS", "*", W::Always, "deprecated in NCCL 2.17: use NCCL_MAX_CTAS", kNcclDoc},
      {"NCCL_MIN_NRINGS", "*", W::Always, "the pre-2.5 name of NCCL_MIN_NCHANNELS, itself deprecated: use NCCL_MIN_CTAS", kNcclDoc},
      {"NCCL_MAX_NRINGS", "*", W::Always, "the pre-2.5 name of NCCL_MAX_NCHANNELS, itself deprecated: use NCCL_MAX_CTAS", kNcclDoc},
      {"NCCL_CHECKS_DISABLE", "*", W::Always, "deprecated since NCCL 2.2.12", kNcclDoc},
      {"NCCL_CHECK_POINTERS", "*", W::Always, "deprecated in NCCL 2.29.7: use NCCL_CHECK_MODE=DEBUG_LOCAL", kNcclDoc},
      {"NCCL_LAUNCH_MODE", "group", W::Always, "GROUP is deprecated since NCCL 2.9", kNcclDoc},
      {"NCCL_IB_CUDA_SUPPORT", "*", W::Always, "removed in NCCL 2.4.0: use NCCL_NET_GDR_LEVEL", kNcclDoc},
      {"NCCL_SINGLE_RING_THRESHOLD", "*", W::Always, "removed in NCCL 2.3: it does nothing", kNcclDoc},
      {"NCCL_LL_THRESHOLD", "*", W::Always, "removed in NCCL 2.5: it does nothing", kNcclDoc},
      {"NCCL_TREE_THRESHOLD", "*", W::Always, "removed in NCCL 2.5: it does nothing", kNcclDoc},
  };
  return rows;
}

bool glob_match(std::string_view pattern, std::string_view text, bool fold) {
  const std::string p(pattern), t(text);  // fnmatch wants NUL-terminated strings
  return fnmatch(p.c_str(), t.c_str(), fold ? FNM_CASEFOLD : 0) == 0;
}

std::vector<AdviceHit> advise(const std::map<std::string, std::string>& env, bool ofi_plugin) {
  std::vector<AdviceHit> hits;
  for (const auto& [name, value] : env) {
    const SettingAdvice* found = nullptr;
    for (const bool globs : {false, true}) {
      for (const auto& row : settings_advice()) {
        if (found || is_glob(row.setting) != globs) continue;
        if (row.when == AdviceWhen::WithOfiPlugin && !ofi_plugin) continue;
        const bool name_ok = globs ? glob_match(row.setting, name) : row.setting == name;
        if (name_ok && glob_match(row.value, value, true)) found = &row;
      }
    }
    if (found) hits.push_back({name, value, found});
  }
  return hits;
}

}  // namespace smddp::diag
