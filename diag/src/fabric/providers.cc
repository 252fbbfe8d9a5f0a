#include "fabric/providers.h"

#include <rdma/fabric.h>

#include <cstring>
#include <fmt/format.h>
#include <set>

#include "smddp/common/strings.h"

namespace smddp::diag {
namespace {

constexpr uint32_t kFiVersion = FI_VERSION(1, 9);

std::string to_text(const void* data, fi_type type) {
  char buf[1024] = {};
  fi_tostr_r(buf, sizeof buf, data, type);
  return std::string(common::trim_end(buf));
}

ProviderInfo describe(const fi_info* info) {
  ProviderInfo p;
  p.provider = info->fabric_attr && info->fabric_attr->prov_name ? info->fabric_attr->prov_name : "";
  p.fabric = info->fabric_attr && info->fabric_attr->name ? info->fabric_attr->name : "";
  p.domain = info->domain_attr && info->domain_attr->name ? info->domain_attr->name : "";
  p.version = info->fabric_attr ? info->fabric_attr->prov_version : 0;
  if (info->ep_attr) {
    p.ep_type = to_text(&info->ep_attr->type, FI_TYPE_EP_TYPE);
    p.protocol = to_text(&info->ep_attr->protocol, FI_TYPE_PROTOCOL);
    p.max_msg_size = info->ep_attr->max_msg_size;
  }
  p.caps = to_text(&info->caps, FI_TYPE_CAPS);
  if (info->domain_attr) {
    p.mr_mode = to_text(&info->domain_attr->mr_mode, FI_TYPE_MR_MODE);
    p.progress = to_text(&info->domain_attr->data_progress, FI_TYPE_PROGRESS);
  }
  p.addr_format = to_text(&info->addr_format, FI_TYPE_ADDR_FORMAT);
  if (info->tx_attr) {
    p.inject_size = info->tx_attr->inject_size;
    p.tx_size = info->tx_attr->size;
  }
  if (info->rx_attr) p.rx_size = info->rx_attr->size;
  return p;
}

}  // namespace

std::vector<ProviderInfo> query_providers(const std::string& provider, bool rdm_only, std::string* error) {
  fi_info* hints = fi_allocinfo();
  if (!provider.empty()) hints->fabric_attr->prov_name = strdup(provider.c_str());
  if (rdm_only) hints->ep_attr->type = FI_EP_RDM;
  hints->mode = ~0ULL;  // list whatever the provider needs; the endpoint code is stricter
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  fi_info* list = nullptr;
  int rc = fi_getinfo(kFiVersion, nullptr, nullptr, 0, hints, &list);
  fi_freeinfo(hints);
  std::vector<ProviderInfo> out;
  if (rc != 0) {
    if (error) *error = fmt::format("fi_getinfo: {}", fi_strerror(-rc));
    return out;
  }
  // Utility layers list one entry per mode and capability variant: keep the
  // first of each provider, fabric, domain and endpoint type.
  std::set<std::string> seen;
  for (const fi_info* i = list; i; i = i->next) {
    ProviderInfo p = describe(i);
    if (seen.insert(p.provider + "|" + p.fabric + "|" + p.domain + "|" + p.ep_type).second) out.push_back(std::move(p));
  }
  fi_freeinfo(list);
  return out;
}

std::vector<std::string> available_providers() {
  std::set<std::string> names;
  std::string error;
  for (const auto& p : query_providers("", false, &error)) names.insert(p.provider);
  return {names.begin(), names.end()};
}

std::string default_provider() {
  std::string error;
  return query_providers("efa", true, &error).empty() ? "tcp" : "efa";
}

nlohmann::json provider_json(const ProviderInfo& p) {
  return {{"provider", p.provider},         {"fabric", p.fabric},       {"domain", p.domain},
          {"ep_type", p.ep_type},           {"protocol", p.protocol},   {"caps", p.caps},
          {"mr_mode", p.mr_mode},           {"addr_format", p.addr_format}, {"progress", p.progress},
          {"max_msg_size", p.max_msg_size}, {"inject_size", p.inject_size}, {"tx_size", p.tx_size},
          {"rx_size", p.rx_size},           {"version", fmt::format("{}.{}", FI_MAJOR(p.version), FI_MINOR(p.version))}};
}

std::string providers_text(const std::vector<ProviderInfo>& infos) {
  std::string out;
  for (const auto& p : infos) {
    out += fmt::format("{:<14} fabric {:<16} domain {:<12} {:<10} max_msg {} inject {} tx/rx {}/{}\n", p.provider,
                       p.fabric, p.domain, p.ep_type, p.max_msg_size, p.inject_size, p.tx_size, p.rx_size);
    out += fmt::format("  caps: {}\n  mr_mode: {}  addr: {}  progress: {}\n", p.caps, p.mr_mode.empty() ? "[]" : p.mr_mode,
                       p.addr_format, p.progress);
  }
  return out;
}

}  // namespace smddp::diag
