// The libfabric transport: the transport contract (transport.h) over one RDM
// endpoint with tagged messages.
//
// Matching. Every message between a pair of ranks carries a 64-bit tag
// (sender rank << 40 | sequence number); each side counts the pieces it
// sends to and receives from every peer, so the n-th receive posted for a
// peer matches exactly the n-th piece that peer sent us, whatever order the
// provider delivers them in. This is the contract's "matched in posting
// order" without relying on provider ordering. Receives use FI_ADDR_UNSPEC:
// the sender is in the tag, so FI_DIRECTED_RECV is not needed.
//
// Pieces. A request larger than the piece size (the provider's max_msg_size,
// or SMDDP_FABRIC_MAX_MSG) is posted as several tagged messages, up to
// kMaxPostedPerDirection sends and as many receives in flight at a time.
// Each posted piece is an Op from a pool that only grows to the high-water
// mark: no allocation per message in steady state. Sends that fit the
// provider's inject size go out with fi_tinject and complete at once.
//
// Progress and errors. progress() reads the completion queue (the data
// progress of tcp and efa is manual: nothing moves between calls).
// Completion errors are read with fi_cq_readerr and described with
// fi_cq_strerror. An error on a connection (refused, reset, unreachable,
// ...) marks the peer lost; check_peer(), which the router calls while a
// wait is slow, then throws PeerLostError with the rank, its host and the
// provider's message. A rank blocked in a receive would never see such an
// error, and over tcp rxm does not fail operations for a dead peer at all
// (it keeps reconnecting). So check_peer() probes the peer's liveness port
// (fabric_liveness.h), which tells a dead process from a slow one, and
// also sends it a small "ping" (a control tag every rank keeps a receive
// posted for) at most every 200 ms, for providers that do report a send to
// a dead peer as an error (efa).
#include "transports/fabric_transport.h"

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <poll.h>

#include <chrono>
#include <cstdlib>
#include <deque>
#include <string>
#include <vector>

#include "smddp/config.h"
#include "smddp/error.h"
#include "smddp/fabric/endpoint.h"
#include "transports/fabric_liveness.h"
#include "transports/fabric_ops.h"

namespace smddp {
namespace {

constexpr uint64_t kControlBit = uint64_t{1} << 63;
constexpr int kRankShift = 40;
constexpr uint64_t kSequenceMask = (uint64_t{1} << kRankShift) - 1;
constexpr auto kPingInterval = std::chrono::milliseconds(200);
constexpr int kCompletionBatch = 32;
constexpr unsigned kIdlePollEvery = 16;  // progress() calls between CQ reads when idle
constexpr unsigned kServeEvery = 4096;   // progress() calls between liveness accepts
// Data pieces handed to libfabric at once, per direction; the rest wait in
// order. Over tcp;ofi_rxm a request of 4096 pieces or more (a 32 MiB ring
// step in 4 KiB pieces) posted all at once never completed (measured on 2
// namespace hosts, docs/engine.md); with this many in flight it does.
constexpr size_t kMaxPostedPerDirection = 1024;
// Waiting: poll the queue spin_polls_ times (data is usually microseconds
// away), then sleep on its descriptor for up to nap_nanos_ at a time: the
// core goes to the peer that needs it, and the kernel wakes us as soon as
// data arrives. Tunable with SMDDP_FABRIC_SPIN / SMDDP_FABRIC_NAP_US (64
// polls, 200 us: the defaults are in the configuration table).

uint64_t data_tag(int sender, uint64_t seq) {
  return (static_cast<uint64_t>(sender) << kRankShift) | (seq & kSequenceMask);
}

// Errors that say the peer (or the path to it) is gone, not that we erred.
bool is_connection_error(int err) {
  switch (err) {
    case FI_ETRUNC: case FI_EMSGSIZE: case FI_EINVAL: case FI_ENOMEM: case FI_ENOSYS:
    case FI_EOPNOTSUPP: case FI_EBADF: case FI_EFAULT:
      return false;
    default:
      return true;
  }
}

using Op = FabricOp;

class FabricTransport final : public Transport {
 public:
  FabricTransport(std::unique_ptr<FabricEndpoint> ep, std::unique_ptr<LivenessProbe> liveness,
                  const Topology& topo, size_t max_piece)
      : ep_(std::move(ep)), liveness_(std::move(liveness)), topo_(topo), me_(topo.rank),
        max_piece_(max_piece) {
    register_buffers_ = ep_->mr_local || config::text("SMDDP_FABRIC_MR") == "always";
    send_seq_.assign(topo.size, 0);
    recv_seq_.assign(topo.size, 0);
    lost_.assign(topo.size, {});
    ping_inflight_.assign(topo.size, false);
    last_ping_.assign(topo.size, Clock::time_point{});
    if (register_buffers_) {
      ping_mr_ = register_memory(&ping_word_, sizeof(ping_word_), FI_SEND);
      sink_mr_ = register_memory(&sink_word_, sizeof(sink_word_), FI_RECV);
    }
    sink_ = alloc();
    sink_->kind = Op::Kind::Sink;
    sink_->buf = reinterpret_cast<char*>(&sink_word_);
    sink_->bytes = sizeof(sink_word_);
    sink_->tag = kControlBit;
    sink_->desc = sink_mr_ ? fi_mr_desc(sink_mr_) : nullptr;
    submit(sink_);
  }

  ~FabricTransport() override {
    // Let pings in flight leave before the connections close (bounded).
    auto until = Clock::now() + std::chrono::milliseconds(100);
    try {
      while (pings_inflight_ > 0 && Clock::now() < until) poll_completions();
    } catch (const Error&) {
    }
    fi_close(&ep_->ep->fid);  // cancels what is still posted
    ep_->ep = nullptr;
    if (ping_mr_) fi_close(&ping_mr_->fid);
    if (sink_mr_) fi_close(&sink_mr_->fid);
  }

  std::string_view name() const override { return "fabric"; }

  void post(Request& r) override {
    r.offset = 0;
    r.done = r.bytes == 0;
    if (r.done) return;
    const bool send = r.kind == Request::Kind::Send;
    uint64_t& seq = (send ? send_seq_ : recv_seq_)[r.peer];
    if (send && r.bytes <= ep_->inject_size && r.bytes <= max_piece_) {
      ssize_t rc = fi_tinject(ep_->ep, r.buf, r.bytes, static_cast<fi_addr_t>(r.peer), data_tag(me_, seq));
      if (rc == 0) {
        ++seq;
        r.offset = r.bytes;
        r.done = true;
        return;
      }
      if (rc != -FI_EAGAIN) return fail_post(r.peer, send, rc);
    }
    for (size_t off = 0; off < r.bytes; off += max_piece_) {
      Op* op = alloc();
      op->send = send;
      op->request = &r;
      op->peer = r.peer;
      op->buf = static_cast<char*>(r.buf) + off;
      op->bytes = std::min(max_piece_, r.bytes - off);
      op->tag = data_tag(send ? me_ : r.peer, seq++);
      if (register_buffers_) {
        op->mr = register_memory(op->buf, op->bytes, send ? FI_SEND : FI_RECV);
        op->desc = fi_mr_desc(op->mr);
      }
      ++active_;
      submit(op);
    }
  }

  void progress() override {
    if (!waiting_[0].empty() || !waiting_[1].empty()) flush_waiting();
    if ((++serve_polls_ % kServeEvery) == 0) liveness_->serve();
    // Idle: read the queue now and then only, so waits on other transports
    // (shm inside the node) stay cheap while connections still progress.
    if (active_ == 0 && pings_inflight_ == 0 && (++idle_polls_ % kIdlePollEvery) != 0) return;
    if (poll_completions() > 0 || active_ == 0) {
      empty_polls_ = 0;
      return;
    }
    if (++empty_polls_ >= spin_polls_) sleep_on_queue();
  }

  void check_peer(int peer) override {
    liveness_->serve();
    if (lost_[peer].empty()) {
      if (std::string why = liveness_->probe(peer); !why.empty()) {
        lost_[peer] = "rank " + std::to_string(peer) + " on " + topo_.hosts[peer] + ": " + why;
      }
    }
    if (!lost_[peer].empty()) throw PeerLostError(lost_[peer]);
    auto now = Clock::now();
    if (ping_inflight_[peer] || now - last_ping_[peer] < kPingInterval) return;
    last_ping_[peer] = now;
    ping_inflight_[peer] = true;
    ++pings_inflight_;
    Op* op = alloc();
    op->kind = Op::Kind::Ping;
    op->send = true;
    op->peer = peer;
    op->buf = reinterpret_cast<char*>(&ping_word_);
    op->bytes = sizeof(ping_word_);
    op->tag = kControlBit | data_tag(me_, 0);
    op->desc = ping_mr_ ? fi_mr_desc(ping_mr_) : nullptr;
    submit(op);
  }

 private:
  using Clock = std::chrono::steady_clock;

  Op* alloc() { return pool_.get(); }
  void release(Op* op) { pool_.put(op); }

  fid_mr* register_memory(void* buf, size_t bytes, uint64_t access) {
    fid_mr* mr = nullptr;
    uint64_t key = ep_->mr_prov_key ? 0 : next_key_++;
    int rc = fi_mr_reg(ep_->domain, buf, bytes, access, 0, key, 0, &mr, nullptr);
    if (rc == 0 && ep_->mr_endpoint) {
      rc = fi_mr_bind(mr, &ep_->ep->fid, 0);
      if (rc == 0) rc = fi_mr_enable(mr);
    }
    if (rc != 0) {
      if (mr) fi_close(&mr->fid);
      throw TransportError("libfabric fi_mr_reg of " + std::to_string(bytes) + " bytes on provider '" +
                           ep_->provider + "' failed: " + fabric_strerror(rc));
    }
    return mr;
  }

  // Posts an op, or parks it behind those of its direction that wait: the
  // cap, or a full provider queue (FI_EAGAIN). Control messages (pings, the
  // sink) keep no order and go ahead of waiting data.
  void submit(Op* op) {
    std::deque<Op*>& queue = waiting_[op->send];
    ssize_t rc = queue.empty() || op->kind != Op::Kind::Data ? try_start(op) : -FI_EAGAIN;
    if (rc == -FI_EAGAIN) {
      queue.push_back(op);
    } else if (rc != 0) {
      fail_op(op, rc);
    }
  }

  // 0 when posted, -FI_EAGAIN when it must wait, else libfabric's error.
  ssize_t try_start(Op* op) {
    const bool data = op->kind == Op::Kind::Data;
    if (data && posted_[op->send] >= kMaxPostedPerDirection) return -FI_EAGAIN;
    ssize_t rc = start(op);
    if (rc == 0 && data) {
      op->posted = true;
      ++posted_[op->send];
    }
    return rc;
  }

  // Stops counting a data op as in flight.
  void retire(Op* op) {
    if (op->posted) --posted_[op->send];
    op->posted = false;
  }

  // Stops tracking an op that will not complete (its request stays pending).
  void forget(Op* op) {
    if (op->kind == Op::Kind::Data) {
      --active_;
      retire(op);
    }
    if (op->kind == Op::Kind::Ping) ping_done(op->peer);
    release(op);
  }

  void fail_op(Op* op, ssize_t rc) {
    const int peer = op->peer;
    const bool send = op->send;
    forget(op);
    fail_post(peer, send, rc);
  }

  ssize_t start(Op* op) {
    if (op->send) {
      return fi_tsend(ep_->ep, op->buf, op->bytes, op->desc, static_cast<fi_addr_t>(op->peer), op->tag,
                      &op->context);
    }
    const uint64_t ignore = op->kind == Op::Kind::Sink ? ~kControlBit : 0;
    return fi_trecv(ep_->ep, op->buf, op->bytes, op->desc, FI_ADDR_UNSPEC, op->tag, ignore, &op->context);
  }

  void flush_waiting() {
    for (std::deque<Op*>& queue : waiting_) {
      while (!queue.empty()) {
        Op* op = queue.front();
        ssize_t rc = try_start(op);
        if (rc == -FI_EAGAIN) break;
        queue.pop_front();
        if (rc != 0) fail_op(op, rc);  // the request stays pending; check_peer reports why
      }
    }
  }

  // Sleeps until the completion queue's descriptor is readable or kNapNanos
  // pass (other transports may have work too), then reads the queue.
  void sleep_on_queue() {
    if (ep_->wait_fd < 0) return;
    fid* cq = &ep_->cq->fid;
    if (fi_trywait(ep_->fabric, &cq, 1) != FI_SUCCESS) return;  // events pending: poll again
    pollfd p{ep_->wait_fd, POLLIN, 0};
    const timespec nap{0, nap_nanos_};
    ppoll(&p, 1, &nap, nullptr);
  }

  size_t poll_completions() {
    fi_cq_tagged_entry entries[kCompletionBatch];
    size_t total = 0;
    for (;;) {
      ssize_t n = fi_cq_read(ep_->cq, entries, kCompletionBatch);
      if (n == -FI_EAGAIN) return total;
      if (n == -FI_EAVAIL) {
        read_error();
        continue;
      }
      if (n < 0) {
        throw TransportError("libfabric fi_cq_read on provider '" + ep_->provider + "' failed: " +
                             fabric_strerror(n));
      }
      for (ssize_t i = 0; i < n; ++i) complete(Op::of(entries[i].op_context), entries[i].len);
      total += static_cast<size_t>(n);
      if (n < kCompletionBatch) return total;
    }
  }

  void complete(Op* op, size_t len) {
    switch (op->kind) {
      case Op::Kind::Sink:
        submit(op);  // keep one receive posted for pings
        return;
      case Op::Kind::Ping:
        ping_done(op->peer);
        release(op);
        return;
      case Op::Kind::Data:
        break;
    }
    Request& r = *op->request;
    if (!op->send && len != op->bytes) {
      throw TransportError("libfabric: rank " + std::to_string(op->peer) + " on " + topo_.hosts[op->peer] +
                           " sent " + std::to_string(len) + " bytes where " + std::to_string(op->bytes) +
                           " were expected (mismatched collective calls?)");
    }
    r.offset += op->bytes;
    if (r.offset == r.bytes) r.done = true;
    --active_;
    retire(op);
    release(op);
  }

  void read_error() {
    fi_cq_err_entry err{};
    ssize_t rc = fi_cq_readerr(ep_->cq, &err, 0);
    if (rc == -FI_EAGAIN) return;
    if (rc < 0) throw TransportError("libfabric fi_cq_readerr failed: " + fabric_strerror(rc));
    char buf[256] = {};
    const char* detail = fi_cq_strerror(ep_->cq, err.prov_errno, err.err_data, buf, sizeof(buf));
    Op* op = Op::of(err.op_context);
    std::string provider_says = std::string(fi_strerror(err.err)) + " (provider: " +
                                (detail && *detail ? detail : "no detail") + ")";
    if (!op) throw TransportError("libfabric completion error on '" + ep_->provider + "': " + provider_says);
    if (err.err == FI_ECANCELED) {
      if (op->kind != Op::Kind::Sink) forget(op);
      return;
    }
    if (op->kind == Op::Kind::Sink) {
      throw TransportError("libfabric receive of control messages failed on '" + ep_->provider +
                           "': " + provider_says);
    }
    const std::string what = describe(op->peer, op->send) + ": " + provider_says;
    const int peer = op->peer;
    forget(op);
    if (!is_connection_error(err.err)) throw TransportError(what);
    if (lost_[peer].empty()) lost_[peer] = what;
  }

  // Errors returned when posting (rather than in a completion).
  void fail_post(int peer, bool send, ssize_t rc) {
    const std::string what = describe(peer, send) + ": " + fabric_strerror(rc);
    if (!is_connection_error(static_cast<int>(-rc))) throw TransportError(what);
    if (lost_[peer].empty()) lost_[peer] = what;
  }

  std::string describe(int peer, bool send) const {
    return "rank " + std::to_string(peer) + " on " + topo_.hosts[peer] + ": libfabric " + ep_->provider +
           (send ? " send to it failed" : " receive from it failed");
  }

  void ping_done(int peer) {
    ping_inflight_[peer] = false;
    --pings_inflight_;
  }

  std::unique_ptr<FabricEndpoint> ep_;
  std::unique_ptr<LivenessProbe> liveness_;
  const Topology& topo_;
  const int me_;
  const size_t max_piece_;
  bool register_buffers_ = false;
  uint64_t next_key_ = 1;
  FabricOpPool pool_;  // after ep_: destroyed (closing registrations) before the domain
  std::deque<Op*> waiting_[2];  // ops not yet posted: [0] receives, [1] sends, in posting order
  size_t posted_[2] = {0, 0};    // data ops posted and not complete, same index
  std::vector<uint64_t> send_seq_, recv_seq_;
  std::vector<std::string> lost_;  // why each peer is lost; empty while fine
  std::vector<bool> ping_inflight_;
  std::vector<Clock::time_point> last_ping_;
  int pings_inflight_ = 0;
  size_t active_ = 0;  // data ops posted and not complete
  unsigned idle_polls_ = 0;
  unsigned serve_polls_ = 0;
  unsigned empty_polls_ = 0;
  unsigned spin_polls_ = static_cast<unsigned>(config::integer("SMDDP_FABRIC_SPIN"));
  long nap_nanos_ = static_cast<long>(config::integer("SMDDP_FABRIC_NAP_US")) * 1000;
  uint64_t ping_word_ = 0x70696e67;
  uint64_t sink_word_ = 0;
  fid_mr* ping_mr_ = nullptr;
  fid_mr* sink_mr_ = nullptr;
  Op* sink_ = nullptr;
};

}  // namespace

std::unique_ptr<Transport> make_fabric_transport(std::unique_ptr<FabricEndpoint> endpoint,
                                                 std::unique_ptr<LivenessProbe> liveness,
                                                 const Topology& topo, size_t max_piece) {
  return std::make_unique<FabricTransport>(std::move(endpoint), std::move(liveness), topo, max_piece);
}

}  // namespace smddp
