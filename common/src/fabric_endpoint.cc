// Finding and opening a libfabric RDM endpoint. fi_getinfo may offer one
// entry per interface (tcp lists eth0, lo and IPv6 variants): we take the
// first IPv4, non-loopback one, since peers on other hosts must reach the
// address we publish; FI_TCP_IFACE (libfabric's own knob) narrows the list.
#include "smddp/fabric/endpoint.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "smddp/error.h"

namespace smddp {
namespace {

constexpr uint32_t kFabricApi = FI_VERSION(1, 9);
constexpr size_t kCompletionQueueDepth = 4096;

// rxm (the layer over tcp) sends up to 16 KiB eagerly and larger messages
// by segments that need the receiver's progress: one scheduling round each
// when ranks share cores. Our steps send 16-64 KiB pieces at mid sizes, so
// rxm gets a 64 KiB eager limit, and 32 bounce buffers per connection each
// way instead of 128, so that a connection holds the same 4 MiB as with
// libfabric's defaults (docs/engine.md has the measurements). Only when the
// user set none of these knobs. libfabric reads them once, when it loads its
// providers on the first fi_getinfo, which Open MPI's ofi components make
// inside MPI_Init: hence at load time, below. Every rank runs this same
// code, so both ends of a connection agree.
// Returns whether it set them.
bool default_rxm_buffers() {
  constexpr const char* kKnobs[][2] = {{"FI_OFI_RXM_BUFFER_SIZE", "65536"},
                                       {"FI_OFI_RXM_EAGER_LIMIT", "65536"},
                                       {"FI_OFI_RXM_MSG_RX_SIZE", "32"},
                                       {"FI_OFI_RXM_MSG_TX_SIZE", "32"}};
  for (const auto& knob : kKnobs) {
    if (std::getenv(knob[0])) return false;
  }
  for (const auto& knob : kKnobs) setenv(knob[0], knob[1], 0);
  return true;
}
[[maybe_unused]] const bool kRxmDefaultsAtLoad = default_rxm_buffers();

fi_info* make_hints(const std::string& provider) {
  fi_info* hints = fi_allocinfo();
  if (!hints) throw TransportError("libfabric: fi_allocinfo failed");
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_TAGGED | FI_SEND | FI_RECV;
  // Every op carries its own fi_context2, so providers that need one may.
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  // The registration modes we can satisfy; the provider says which it needs.
  hints->domain_attr->mr_mode =
      FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ENDPOINT;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  if (!provider.empty()) hints->fabric_attr->prov_name = strdup(provider.c_str());
  return hints;
}

const char* domain_of(const fi_info* i) { return i->domain_attr && i->domain_attr->name ? i->domain_attr->name : ""; }

// The named domain, else an entry whose address other hosts can reach.
fi_info* pick(fi_info* list, const std::string& domain) {
  for (fi_info* i = list; i; i = i->next) {
    if (!domain.empty() && domain == domain_of(i)) return i;
    if (domain.empty() && std::strcmp(domain_of(i), "lo") != 0 && i->addr_format != FI_SOCKADDR_IN6) return i;
  }
  return domain.empty() ? list : nullptr;
}

void check(int rc, const char* what, const std::string& provider) {
  if (rc == 0) return;
  throw TransportError("libfabric " + std::string(what) + " on provider '" + provider +
                       "' failed: " + fabric_strerror(rc));
}

}  // namespace

std::string fabric_strerror(long rc) {
  return std::to_string(rc) + " (" + fi_strerror(static_cast<int>(rc < 0 ? -rc : rc)) + ")";
}

bool fabric_provider_available(const std::string& provider) {
  fi_info* hints = make_hints(provider);
  fi_info* list = nullptr;
  int rc = fi_getinfo(kFabricApi, nullptr, nullptr, 0, hints, &list);
  fi_freeinfo(hints);
  if (list) fi_freeinfo(list);
  return rc == 0 && list;
}

std::vector<std::string> fabric_domains(const std::string& provider) {
  fi_info* hints = make_hints(provider);
  fi_info* list = nullptr;
  int rc = fi_getinfo(kFabricApi, nullptr, nullptr, 0, hints, &list);
  fi_freeinfo(hints);
  std::vector<std::string> names;
  for (fi_info* i = rc == 0 ? list : nullptr; i; i = i->next) {
    if (std::find(names.begin(), names.end(), domain_of(i)) == names.end()) names.emplace_back(domain_of(i));
  }
  if (list) fi_freeinfo(list);
  return names;
}

std::unique_ptr<FabricEndpoint> FabricEndpoint::open(const std::string& provider, const std::string& domain) {
  auto e = std::make_unique<FabricEndpoint>();
  fi_info* hints = make_hints(provider);
  fi_info* list = nullptr;
  int rc = fi_getinfo(kFabricApi, nullptr, nullptr, 0, hints, &list);
  fi_freeinfo(hints);
  if (rc != 0 || !list) {
    throw TransportError("libfabric provider '" + provider +
                         "' offers no reliable tagged endpoint (fi_getinfo: " + fabric_strerror(rc) +
                         "); check `fi_info -p '" + provider + "' -t FI_EP_RDM`");
  }
  fi_info* chosen = pick(list, domain);
  if (!chosen) {
    fi_freeinfo(list);
    throw TransportError("libfabric provider '" + provider + "' has no domain '" + domain + "'");
  }
  e->info = fi_dupinfo(chosen);
  fi_freeinfo(list);
  fi_info* info = e->info;
  e->provider = info->fabric_attr->prov_name ? info->fabric_attr->prov_name : provider;
  e->domain_name = info->domain_attr->name ? info->domain_attr->name : "";
  const uint64_t mr_mode = static_cast<uint64_t>(info->domain_attr->mr_mode);
  e->mr_local = (mr_mode & FI_MR_LOCAL) != 0;
  e->mr_endpoint = (mr_mode & FI_MR_ENDPOINT) != 0;
  e->mr_prov_key = (mr_mode & FI_MR_PROV_KEY) != 0;
  e->max_msg_size = info->ep_attr->max_msg_size ? info->ep_attr->max_msg_size : (size_t{1} << 30);
  e->inject_size = info->tx_attr->inject_size;

  check(fi_fabric(info->fabric_attr, &e->fabric, nullptr), "fi_fabric", e->provider);
  check(fi_domain(e->fabric, info, &e->domain, nullptr), "fi_domain", e->provider);
  // A file descriptor to sleep on lets a waiting rank give its core away
  // and still wake the moment data arrives; providers without one are polled.
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_TAGGED;
  cq_attr.size = kCompletionQueueDepth;
  cq_attr.wait_obj = FI_WAIT_FD;
  if (fi_cq_open(e->domain, &cq_attr, &e->cq, nullptr) == 0) {
    if (fi_control(&e->cq->fid, FI_GETWAIT, &e->wait_fd) != 0) e->wait_fd = -1;
  } else {
    cq_attr.wait_obj = FI_WAIT_NONE;
    check(fi_cq_open(e->domain, &cq_attr, &e->cq, nullptr), "fi_cq_open", e->provider);
  }
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  check(fi_av_open(e->domain, &av_attr, &e->av, nullptr), "fi_av_open", e->provider);
  check(fi_endpoint(e->domain, info, &e->ep, nullptr), "fi_endpoint", e->provider);
  check(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)", e->provider);
  check(fi_ep_bind(e->ep, &e->av->fid, 0), "fi_ep_bind(av)", e->provider);
  check(fi_enable(e->ep), "fi_enable", e->provider);
  return e;
}

FabricEndpoint::~FabricEndpoint() {
  // Reverse order of creation; each close also cancels what is posted on it.
  if (ep) fi_close(&ep->fid);
  if (av) fi_close(&av->fid);
  if (cq) fi_close(&cq->fid);
  if (domain) fi_close(&domain->fid);
  if (fabric) fi_close(&fabric->fid);
  if (info) fi_freeinfo(info);
}

std::vector<char> FabricEndpoint::address() const {
  std::vector<char> name(256);
  size_t len = name.size();
  check(fi_getname(&ep->fid, name.data(), &len), "fi_getname", provider);
  name.resize(len);
  return name;
}

void FabricEndpoint::insert_peers(const std::vector<std::vector<char>>& addresses) {
  for (size_t r = 0; r < addresses.size(); ++r) {
    fi_addr_t got = FI_ADDR_NOTAVAIL;
    int n = fi_av_insert(av, addresses[r].data(), 1, &got, 0, nullptr);
    if (n != 1 || got != r) {
      throw TransportError("libfabric fi_av_insert of rank " + std::to_string(r) + " on provider '" +
                           provider + "' failed: " + fabric_strerror(n < 0 ? n : -FI_EINVAL));
    }
  }
}

}  // namespace smddp
