// What libfabric offers on this host: fi_getinfo entries by provider and
// endpoint type, the attributes an operator cares about, and the default
// provider (efa when present, else tcp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace smddp::diag {

struct ProviderInfo {
  std::string provider;   // "efa", "tcp;ofi_rxm", "shm"
  std::string fabric, domain;
  std::string ep_type;    // "FI_EP_RDM"
  std::string caps, mr_mode, addr_format, protocol, progress;
  uint64_t max_msg_size = 0, inject_size = 0;
  size_t tx_size = 0, rx_size = 0;
  uint32_t version = 0;
};

// fi_getinfo for `provider` ("" for all) and, when `rdm_only`, FI_EP_RDM
// endpoints only. Empty with *error set ("fi_getinfo: No data available")
// when nothing matches.
std::vector<ProviderInfo> query_providers(const std::string& provider, bool rdm_only, std::string* error);

// Distinct provider names fi_getinfo lists (utility layers included: "tcp;ofi_rxm").
std::vector<std::string> available_providers();

// "efa" when an efa RDM endpoint is available, else "tcp".
std::string default_provider();

nlohmann::json provider_json(const ProviderInfo& p);
std::string providers_text(const std::vector<ProviderInfo>& infos);

}  // namespace smddp::diag
