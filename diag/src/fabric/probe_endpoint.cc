#include "fabric/probe_endpoint.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "smddp/tools/exit_codes.h"
#include "smddp/error.h"

namespace smddp::diag {
namespace {

constexpr size_t kMaxOutstanding = 256;

void check(int rc, const char* what) {
  if (rc != 0) throw TransportError(fmt::format("{} failed: {}", what, fi_strerror(-rc)));
}

}  // namespace

RdmEndpoint::RdmEndpoint(const std::string& provider, const std::string& domain, size_t buffer_bytes)
    : send_buf_(buffer_bytes ? buffer_bytes : 1, 'p'), recv_buf_(buffer_bytes ? buffer_bytes : 1), contexts_(kMaxOutstanding) {
  // A missing provider or domain is exit 69 here; the shared opener only
  // knows TransportError.
  const std::vector<std::string> domains = fabric_domains(provider);
  if (domains.empty()) {
    throw tools::UnavailableError(
        fmt::format("libfabric provider '{}' offers no RDM endpoint with tagged messages here", provider));
  }
  if (!domain.empty() && std::find(domains.begin(), domains.end(), domain) == domains.end()) {
    throw tools::UnavailableError(
        fmt::format("provider '{}' has no domain '{}' (it has: {})", provider, domain, fmt::join(domains, ", ")));
  }
  // The engine's opener and hints: the probe measures what the transport runs on.
  ep_ = FabricEndpoint::open(provider, domain);
  info_.provider = ep_->provider;
  info_.fabric = ep_->info->fabric_attr->name ? ep_->info->fabric_attr->name : "";
  info_.domain = ep_->domain_name;
  info_.ep_type = "FI_EP_RDM";
  info_.max_msg_size = ep_->max_msg_size;
  info_.inject_size = ep_->inject_size;
  if (buffer_bytes > info_.max_msg_size) {
    throw UsageError(fmt::format("{} bytes is above the provider's largest message ({} bytes)", buffer_bytes,
                                 info_.max_msg_size));
  }
  if (ep_->mr_local) {
    send_mr_ = register_buffer(send_buf_, FI_SEND, 1);
    recv_mr_ = register_buffer(recv_buf_, FI_RECV, 2);
  }
}

// As the transport registers: bound to the endpoint when the provider asks.
fid_mr* RdmEndpoint::register_buffer(std::vector<char>& buf, uint64_t access, uint64_t key) {
  fid_mr* mr = nullptr;
  check(fi_mr_reg(ep_->domain, buf.data(), buf.size(), access, 0, key, 0, &mr, nullptr), "fi_mr_reg");
  if (ep_->mr_endpoint) {
    int rc = fi_mr_bind(mr, &ep_->ep->fid, 0);
    if (rc == 0) rc = fi_mr_enable(mr);
    if (rc != 0) {
      fi_close(&mr->fid);
      check(rc, "fi_mr_bind");
    }
  }
  return mr;
}

RdmEndpoint::~RdmEndpoint() {
  if (send_mr_) fi_close(&send_mr_->fid);
  if (recv_mr_) fi_close(&recv_mr_->fid);
}

std::string RdmEndpoint::address() const {
  const std::vector<char> name = ep_->address();
  return std::string(name.begin(), name.end());
}

void RdmEndpoint::insert_peers(const std::vector<std::string>& addresses) {
  std::vector<std::vector<char>> names;
  for (const auto& a : addresses) names.emplace_back(a.begin(), a.end());
  ep_->insert_peers(names);  // fi_addr_t i is rank i
}

void* RdmEndpoint::next_context() {
  if (posted_ - completed_ >= kMaxOutstanding) throw Error("too many outstanding libfabric operations");
  return &contexts_[posted_ % kMaxOutstanding];
}

void RdmEndpoint::progress() {
  fi_cq_tagged_entry entries[16];  // the shared opener's CQ format
  ssize_t n = fi_cq_read(ep_->cq, entries, 16);
  if (n > 0) {
    completed_ += static_cast<size_t>(n);
    return;
  }
  if (n == -FI_EAGAIN) return;
  if (n == -FI_EAVAIL) {
    fi_cq_err_entry err{};
    fi_cq_readerr(ep_->cq, &err, 0);
    char buf[256] = {};
    const char* text = fi_cq_strerror(ep_->cq, err.prov_errno, err.err_data, buf, sizeof buf);
    throw TransportError(fmt::format("libfabric completion error: {} ({})", fi_strerror(err.err), text ? text : ""));
  }
  throw TransportError(fmt::format("fi_cq_read failed: {}", fi_strerror(static_cast<int>(-n))));
}

void RdmEndpoint::post_send(int peer, size_t bytes, uint64_t tag, Deadline deadline) {
  void* desc = send_mr_ ? fi_mr_desc(send_mr_) : nullptr;
  Backoff backoff;
  for (;;) {
    ssize_t rc = fi_tsend(ep_->ep, send_buf_.data(), bytes, desc, static_cast<fi_addr_t>(peer), tag, next_context());
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
    ssize_t rc = fi_trecv(ep_->ep, recv_buf_.data(), bytes, desc, FI_ADDR_UNSPEC, tag, 0, next_context());
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
