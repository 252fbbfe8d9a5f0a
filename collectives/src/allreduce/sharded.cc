// Sharded allreduce, after SMDDP's Herring (SC20): the nodes' CPUs act as a
// sharded parameter server.
//
//   1. Inside each node, reduce-scatter: local rank i ends with shard i, the
//      node's partial sum of block i of the vector.
//   2. Between nodes, among the ranks with local rank i (the cross group, one
//      per node, M nodes): the shard is split into M sub-shards; sub-shard k
//      is served by node k. Every rank sends sub-shard k to the server of k,
//      the server reduces the M contributions and sends the result back to
//      every node. Each rank sends and receives 2(M-1)/M of its shard, as in
//      a ring, but in two direct steps instead of 2(M-1) hops, with all
//      links busy at once.
//   3. Inside each node, allgather of the shards.
//
// On the cross group itself (one rank per node, as hierarchical's
// inter-node step runs) only step 2 runs, on the whole vector.
//
// Pipelining. Sub-shards are cut into chunks of kChunkBytes. Contributions
// for kWindow chunks are in flight at once: while chunk c is reduced, the
// transfers of chunks c+1..c+kWindow-1 proceed, and the result of chunk c is
// on its way back while later chunks are reduced.
//
// Message order per pair of ranks is the same on both sides (every rank runs
// the same schedule: contributions of chunks 0..W-1, then per chunk c its
// result and the contribution of chunk c+W), as the transport contract's
// in-order matching needs.
#include <vector>

#include "algorithms/catalog.h"
#include "allreduce/node_phases.h"
#include "smddp/reduce.h"

namespace smddp {
namespace {

// Pipeline granularity. Each chunk is a message; over tcp every message
// above 128 KiB costs a rendezvous handshake, so chunks are large enough to
// amortise it (512 KiB measured ~25% slower at 64 MiB than 2 MiB).
constexpr size_t kChunkBytes = size_t{2} << 20;
constexpr int kWindow = 4;                          // chunks in flight

// The inter-node step on this rank's shard (elements [0, len) of `shard`),
// among the ranks of `cross` (one per node).
class ShardServer {
 public:
  ShardServer(Context& ctx, const Group& cross, const Call& call, char* shard, size_t len)
      : ctx_(ctx), x_(cross), call_(call), es_(call.esize()), shard_(shard),
        sub_(patterns::Partition::balanced(len, x_.size())) {
    chunk_ = std::max<size_t>(1, kChunkBytes / es_);
    chunks_ = (sub_.max_length() + chunk_ - 1) / chunk_;
    const int peers = x_.size() - 1;
    // Window: the nested node collectives use the leaf slots.
    incoming_ = ctx.scratch.get(ScratchSlot::Window, static_cast<size_t>(peers) * kWindow * chunk_ * es_);
    contributions_.resize(static_cast<size_t>(kWindow) * 2 * peers);
    results_.resize(chunks_ * 2 * peers);
    srcs_.resize(x_.size());
  }

  void run() {
    for (size_t c = 0; c < std::min<size_t>(kWindow, chunks_); ++c) post_contributions(c);
    for (size_t c = 0; c < chunks_; ++c) {
      ctx_.router().wait(window(c), ctx_.scope);
      reduce_chunk(c);
      post_results(c);
      if (c + kWindow < chunks_) post_contributions(c + kWindow);
    }
    ctx_.router().wait(results_, ctx_.scope);
  }

 private:
  // Elements of sub-shard k that chunk c covers, as (first element, count).
  size_t first(int k, size_t c) const { return sub_.offset(k) + std::min(sub_.length(k), c * chunk_); }
  size_t count(int k, size_t c) const {
    size_t len = sub_.length(k), lo = std::min(len, c * chunk_);
    return std::min(len, lo + chunk_) - lo;
  }
  int peer(int j) const { return patterns::mod(x_.me + j, x_.size()); }  // j = 1..M-1
  char* incoming(size_t c, int j) const {
    return incoming_ + ((c % kWindow) * (x_.size() - 1) + (j - 1)) * chunk_ * es_;
  }
  std::span<Request> window(size_t c) {
    const size_t per = 2 * static_cast<size_t>(x_.size() - 1);
    return {contributions_.data() + (c % kWindow) * per, per};
  }

  void post(Request& r, Request::Kind kind, int k, void* buf, size_t elems) {
    r = Request{kind, x_.ranks[k], ctx_.tag, buf, elems * es_};
    ctx_.router().post(r);
  }

  // Our part of sub-shard k goes to server k; server `me` receives the others'.
  void post_contributions(size_t c) {
    std::span<Request> w = window(c);
    for (int j = 1; j < x_.size(); ++j) {
      post(w[2 * (j - 1)], Request::Kind::Recv, peer(-j), incoming(c, j), count(x_.me, c));
    }
    for (int j = 1; j < x_.size(); ++j) {
      const int k = peer(j);
      post(w[2 * (j - 1) + 1], Request::Kind::Send, k, shard_ + first(k, c) * es_, count(k, c));
    }
  }

  void reduce_chunk(size_t c) {
    const size_t n = count(x_.me, c);
    if (n == 0) return;
    char* mine = shard_ + first(x_.me, c) * es_;
    srcs_[0] = mine;
    for (int j = 1; j < x_.size(); ++j) srcs_[j] = incoming(c, j);
    reduce(mine, srcs_.data(), x_.size(), n, call_.dtype, call_.op);
  }

  // The reduced chunk goes to every node; their reduced chunks come back
  // into the sub-shards we sent them (those sends are complete by now).
  void post_results(size_t c) {
    Request* r = results_.data() + c * 2 * (x_.size() - 1);
    for (int j = 1; j < x_.size(); ++j) {
      const int k = peer(-j);
      post(r[2 * (j - 1)], Request::Kind::Recv, k, shard_ + first(k, c) * es_, count(k, c));
    }
    char* mine = shard_ + first(x_.me, c) * es_;
    for (int j = 1; j < x_.size(); ++j) {
      post(r[2 * (j - 1) + 1], Request::Kind::Send, peer(j), mine, count(x_.me, c));
    }
  }

  Context& ctx_;
  const Group& x_;
  const Call& call_;
  const size_t es_;
  char* const shard_;
  const patterns::Partition sub_;
  size_t chunk_ = 0, chunks_ = 0;
  char* incoming_ = nullptr;
  std::vector<Request> contributions_, results_;
  std::vector<const void*> srcs_;
};

}  // namespace

const char* allreduce_sharded_accepts(const CallShape& shape) {
  if (shape.group == GroupKind::Cross) return shape.group_size > 1 ? nullptr : "needs more than one node";
  if (shape.group != GroupKind::World) return "runs on the whole communicator or across nodes only";
  return node_phases::why_not(shape);
}

void allreduce_sharded(Context& ctx, const Group& g, const Call& call) {
  if (g.kind == GroupKind::Cross) {
    copy_if_distinct(call.recv, call.send, call.count * call.esize());
    if (call.count > 0) ShardServer(ctx, g, call, static_cast<char*>(call.recv), call.count).run();
    return;
  }
  node_phases::run(ctx, call, [&](char* shard, size_t count) {
    if (count > 0) ShardServer(ctx, ctx.cross, call, shard, count).run();
  });
}

}  // namespace smddp
