#include "fabric/endpoint.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <cstring>
#include <fmt/format.h>

#include "common/exit_codes.h"
#include "smddp/error.h"

namespace smddp::diag {
namespace {

constexpr uint32_t kFiVersion = FI_VERSION(1, 9);
constexpr size_t kMaxOutstanding = 256;

void check(int rc, const char* what) {
  if (rc != 0) throw TransportError(fmt::format("{} failed: {}", what, fi_strerror(-rc)));
}

// The entry for `domain`, else the first IPv4 one (tcp lists IPv6 link-local
// addresses too), else the first.
fi_info* choose(fi_info* list, const std::string& domain) {
  fi_info* first_v4 = nullptr;
  for (fi_info* i = list; i; i = i->next) {
    if (!domain.empty() && i->domain_attr->name && domain == i->domain_attr->name) return i;
    if (!first_v4 && i->addr_format == FI_SOCKADDR_IN) first_v4 = i;
  }
  if (!domain.empty()) return nullptr;
  return first_v4 ? first_v4 : list;
}

}  // namespace

RdmEndpoint::RdmEndpoint(const std::string& provider, const std::string& domain, size_t buffer_bytes)
    : send_buf_(buffer_bytes ? buffer_bytes : 1, 'p'), recv_buf_(buffer_bytes ? buffer_bytes : 1), contexts_(kMaxOutstanding) {
  fi_info* hints = fi_allocinfo();
  hints->fabric_attr->prov_name = strdup(provider.c_str());
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_TAGGED;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  fi_info* list = nullptr;
  int rc = fi_getinfo(kFiVersion, nullptr, nullptr, 0, hints, &list);
  fi_freeinfo(hints);
  if (rc != 0) {
    throw UnavailableError(fmt::format("libfabric provider '{}' offers no RDM endpoint with tagged messages here ({})",
                                       provider, fi_strerror(-rc)));
  }
  fi_info* chosen = choose(list, domain);
  if (!chosen) {
    fi_freeinfo(list);
    throw UnavailableError(fmt::format("provider '{}' has no domain '{}'", provider, domain));
  }
  fi_ = fi_dupinfo(chosen);
  fi_freeinfo(list);
  info_.provider = fi_->fabric_attr->prov_name ? fi_->fabric_attr->prov_name : provider;
  info_.fabric = fi_->fabric_attr->name ? fi_->fabric_attr->name : "";
  info_.domain = fi_->domain_attr->name ? fi_->domain_attr->name : "";
  info_.ep_type = "FI_EP_RDM";
  info_.max_msg_size = fi_->ep_attr->max_msg_size;
  if (buffer_bytes > info_.max_msg_size) {
    throw UsageError(fmt::format("{} bytes is above the provider's largest message ({} bytes)", buffer_bytes,
                                 info_.max_msg_size));
  }

  check(fi_fabric(fi_->fabric_attr, &fabric_, nullptr), "fi_fabric");
  check(fi_domain(fabric_, fi_, &domain_, nullptr), "fi_domain");
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_CONTEXT;
  cq_attr.wait_obj = FI_WAIT_NONE;
  cq_attr.size = kMaxOutstanding * 2;
  check(fi_cq_open(domain_, &cq_attr, &cq_, nullptr), "fi_cq_open");
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_UNSPEC;
  check(fi_av_open(domain_, &av_attr, &av_, nullptr), "fi_av_open");
  check(fi_endpoint(domain_, fi_, &ep_, nullptr), "fi_endpoint");
  check(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
  check(fi_ep_bind(ep_, &av_->fid, 0), "fi_ep_bind(av)");
  check(fi_enable(ep_), "fi_enable");
  if (fi_->domain_attr->mr_mode & FI_MR_LOCAL) {
    check(fi_mr_reg(domain_, send_buf_.data(), send_buf_.size(), FI_SEND, 0, 1, 0, &send_mr_, nullptr), "fi_mr_reg");
    check(fi_mr_reg(domain_, recv_buf_.data(), recv_buf_.size(), FI_RECV, 0, 2, 0, &recv_mr_, nullptr), "fi_mr_reg");
  }
}

RdmEndpoint::~RdmEndpoint() {
  if (send_mr_) fi_close(&send_mr_->fid);
  if (recv_mr_) fi_close(&recv_mr_->fid);
  if (ep_) fi_close(&ep_->fid);
  if (av_) fi_close(&av_->fid);
  if (cq_) fi_close(&cq_->fid);
  if (domain_) fi_close(&domain_->fid);
  if (fabric_) fi_close(&fabric_->fid);
  if (fi_) fi_freeinfo(fi_);
}

std::string RdmEndpoint::address() const {
  size_t len = 0;
  fi_getname(&ep_->fid, nullptr, &len);
  std::string addr(len, '\0');
  check(fi_getname(&ep_->fid, addr.data(), &len), "fi_getname");
  addr.resize(len);
  return addr;
}

void RdmEndpoint::insert_peers(const std::vector<std::string>& addresses) {
  peers_.assign(addresses.size(), FI_ADDR_UNSPEC);
  for (size_t i = 0; i < addresses.size(); ++i) {
    int n = fi_av_insert(av_, addresses[i].data(), 1, &peers_[i], 0, nullptr);
    if (n != 1) throw TransportError(fmt::format("fi_av_insert of rank {} failed", i));
  }
}

void* RdmEndpoint::next_context() {
  if (posted_ - completed_ >= kMaxOutstanding) throw Error("too many outstanding libfabric operations");
  return &contexts_[posted_ % kMaxOutstanding];
}

void RdmEndpoint::progress() {
  fi_cq_entry entries[16];
  ssize_t n = fi_cq_read(cq_, entries, 16);
  if (n > 0) {
    completed_ += static_cast<size_t>(n);
    return;
  }
  if (n == -FI_EAGAIN) return;
  if (n == -FI_EAVAIL) {
    fi_cq_err_entry err{};
    fi_cq_readerr(cq_, &err, 0);
    char buf[256] = {};
    const char* text = fi_cq_strerror(cq_, err.prov_errno, err.err_data, buf, sizeof buf);
    throw TransportError(fmt::format("libfabric completion error: {} ({})", fi_strerror(err.err), text ? text : ""));
  }
  throw TransportError(fmt::format("fi_cq_read failed: {}", fi_strerror(static_cast<int>(-n))));
}

void RdmEndpoint::post_send(int peer, size_t bytes, uint64_t tag, Deadline deadline) {
  void* desc = send_mr_ ? fi_mr_desc(send_mr_) : nullptr;
  Backoff backoff;
  for (;;) {
    ssize_t rc = fi_tsend(ep_, send_buf_.data(), bytes, desc, peers_.at(static_cast<size_t>(peer)), tag, next_context());
    if (rc == 0) break;
    if (rc != -FI_EAGAIN) throw TransportError(fmt::format("fi_tsend to rank {} failed: {}", peer, fi_strerror(static_cast<int>(-rc))));
    progress();
    if (Clock::now() > deadline) throw TimeoutError(fmt::format("fi_tsend to rank {}: send queue full past the deadline", peer));
    backoff.pause();
  }
  ++posted_;
}

void RdmEndpoint::post_recv(int peer, size_t bytes, uint64_t tag, Deadline deadline) {
  void* desc = recv_mr_ ? fi_mr_desc(recv_mr_) : nullptr;
  Backoff backoff;
  for (;;) {
    ssize_t rc = fi_trecv(ep_, recv_buf_.data(), bytes, desc, FI_ADDR_UNSPEC, tag, 0, next_context());
    if (rc == 0) break;
    if (rc != -FI_EAGAIN) throw TransportError(fmt::format("fi_trecv from rank {} failed: {}", peer, fi_strerror(static_cast<int>(-rc))));
    progress();
    if (Clock::now() > deadline) throw TimeoutError(fmt::format("fi_trecv from rank {}: queue full past the deadline", peer));
    backoff.pause();
  }
  ++posted_;
}

void RdmEndpoint::wait_all(Deadline deadline, const std::string& what) {
  Backoff backoff;
  while (completed_ < posted_) {
    size_t before = completed_;
    progress();
    if (completed_ != before) {
      backoff.reset();
      continue;
    }
    if (Clock::now() > deadline) throw TimeoutError("no libfabric completion for " + what + " before the deadline");
    backoff.pause();
  }
}

}  // namespace smddp::diag
