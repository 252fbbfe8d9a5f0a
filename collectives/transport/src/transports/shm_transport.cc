#include "transports/shm_transport.h"

#include <signal.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "core/check.h"
#include "smddp/error.h"

namespace smddp {

bool local_process_gone(int pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

namespace {

class ShmTransport final : public Transport {
 public:
  ShmTransport(ShmSegment& segment, const Topology& topo) : seg_(segment), topo_(topo) {
    const auto& locals = topo.node_ranks[topo.node];
    local_of_.assign(topo.size, -1);
    for (size_t i = 0; i < locals.size(); ++i) local_of_[locals[i]] = static_cast<int>(i);
    me_ = topo.local_rank;
    sends_.resize(locals.size());
    recvs_.resize(locals.size());
    sent_.assign(locals.size(), 0);
    received_.assign(locals.size(), 0);
  }

  std::string_view name() const override { return "shm"; }

  void post(Request& r) override {
    r.offset = 0;
    r.done = r.bytes == 0;  // empty messages never touch the channel
    if (r.done) return;
    int local = local_of_[r.peer];
    SMDDP_CHECK(local >= 0 && local != me_);
    (r.kind == Request::Kind::Send ? sends_ : recvs_)[local].push_back(&r);
    ++pending_;
  }

  void progress() override {
    if (pending_ == 0) return;
    for (size_t p = 0; p < sends_.size(); ++p) {
      while (!sends_[p].empty() && push(static_cast<int>(p), *sends_[p].front())) {
        sends_[p].pop_front();
        --pending_;
      }
      while (!recvs_[p].empty() && pull(static_cast<int>(p), *recvs_[p].front())) {
        recvs_[p].pop_front();
        --pending_;
      }
    }
  }

  void check_peer(int peer) override {
    if (local_process_gone(topo_.pids[peer])) {
      throw PeerLostError("rank " + std::to_string(peer) + " on " + topo_.hosts[peer] +
                          " (pid " + std::to_string(topo_.pids[peer]) + ") is gone");
    }
  }

 private:
  // Fills as many free cells as the channel has; true when all is sent.
  bool push(int peer, Request& r) {
    ChannelControl& ch = seg_.channel(me_, peer);
    const uint64_t cells = seg_.geometry().cells;
    const uint64_t cell_bytes = seg_.geometry().cell_bytes;
    uint64_t head = sent_[peer];
    uint64_t tail = ch.tail.value.load(std::memory_order_acquire);
    while (r.offset < r.bytes && head - tail < cells) {
      size_t n = std::min<uint64_t>(cell_bytes, r.bytes - r.offset);
      char* cell = seg_.cell(me_, peer, head);
      auto* h = reinterpret_cast<CellHeader*>(cell);
      h->tag = static_cast<uint32_t>(r.tag);
      h->bytes = static_cast<uint32_t>(n);
      std::memcpy(cell + kCacheLine, static_cast<const char*>(r.buf) + r.offset, n);
      r.offset += n;
      ++head;
      ch.head.value.store(head, std::memory_order_release);
    }
    sent_[peer] = head;
    r.done = r.offset == r.bytes;
    return r.done;
  }

  // Drains the cells that have arrived; true when the message is complete.
  bool pull(int peer, Request& r) {
    ChannelControl& ch = seg_.channel(peer, me_);
    const uint64_t cell_bytes = seg_.geometry().cell_bytes;
    uint64_t tail = received_[peer];
    uint64_t head = ch.head.value.load(std::memory_order_acquire);
    while (r.offset < r.bytes && tail < head) {
      size_t n = std::min<uint64_t>(cell_bytes, r.bytes - r.offset);
      const char* cell = seg_.cell(peer, me_, tail);
      const auto* h = reinterpret_cast<const CellHeader*>(cell);
      // Both sides agree on message sizes and order; a mismatch is an engine bug.
      SMDDP_CHECK(h->bytes == n && h->tag == static_cast<uint32_t>(r.tag));
      std::memcpy(static_cast<char*>(r.buf) + r.offset, cell + kCacheLine, n);
      r.offset += n;
      ++tail;
      ch.tail.value.store(tail, std::memory_order_release);
    }
    received_[peer] = tail;
    r.done = r.offset == r.bytes;
    return r.done;
  }

  ShmSegment& seg_;
  const Topology& topo_;
  int me_ = 0;
  std::vector<int> local_of_;
  std::vector<std::deque<Request*>> sends_, recvs_;
  std::vector<uint64_t> sent_, received_;
  size_t pending_ = 0;
};

}  // namespace

std::unique_ptr<Transport> make_shm_transport(ShmSegment& segment, const Topology& topo) {
  return std::make_unique<ShmTransport>(segment, topo);
}

}  // namespace smddp
