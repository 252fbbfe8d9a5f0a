// Step schedules (smddp/schedule.h). Each algorithm below mirrors the loop
// structure of its source under <collective>/ with the same patterns/ rank
// arithmetic, emitting transfers instead of running them; a Step is then
// summarised from the transfers (tier, busiest rank, busiest link).
// Intra-node algorithms over shared memory (shm_direct, cma) have no peer
// transfers to list: their steps follow their chunk loops directly. Which
// algorithm accepts a call, and which one the selector takes, the registry
// and the Selector decide (CallShape), not this file.
// tests/unit/schedule_transfers_test.cc runs every algorithm and holds its
// messages (and shm steps) to the schedule.
#include "smddp/schedule.h"

#include <algorithm>
#include <map>

#include "algorithms/registry.h"
#include "algorithms/selector.h"
#include "algorithms/shm_direct.h"
#include "patterns/patterns.h"
#include "patterns/schedule_builder.h"
#include "patterns/schedule_for.h"
#include "smddp/error.h"

namespace smddp::schedule {
namespace {

using patterns::mod;
using patterns::Partition;

constexpr uint64_t kShardedChunkBytes = uint64_t{2} << 20;  // allreduce/sharded.cc
constexpr uint64_t kCmaChunkBytes = 128 << 10;             // allreduce/cma.cc
constexpr uint64_t kCmaReplicatedUpTo = 2 << 20;           // allreduce/cma.cc

using Kind = GroupKind;

using detail::Builder;
using detail::ceil_div;
using detail::Xfer;

// What a call carries, in elements: `count` (allreduce, broadcast, reduce,
// sendrecv: the vector; alltoall, gather, scatter: one block) and `blocks`
// (reduce-scatter, allgather: one block per rank).
struct Data {
  uint64_t count = 0;
  Partition blocks;
};

int group_size(const Builder& b, Kind k) {
  const Topology& t = b.topo();
  return k == Kind::World ? t.ranks() : k == Kind::Node ? t.ranks_per_host : t.hosts;
}

CallShape shape(const Builder& b, Collective c, Kind k, uint64_t bytes) {
  return modelled_shape(c, k, b.topo(), bytes, b.options());
}

// Why `name` declines the call (the registry's own rule), or nullptr.
const char* declines(const Builder& b, Collective c, std::string_view name, Kind k, uint64_t bytes) {
  return find_algorithm(c, name)->accepts(shape(b, c, k, bytes));
}

// The builder's selector's choice for a group of kind `k` ("" when nothing
// accepts the call): the engine's, model-driven one when it ranks
// algorithms, the fallback table's through make().
std::string choose(const Builder& b, Collective c, Kind k, uint64_t bytes) {
  try {
    return std::string(b.selector().choose(shape(b, c, k, bytes), "auto").info.name);
  } catch (const UsageError&) {
    return "";
  }
}

void run(Builder& b, Collective c, const std::string& name, Kind k, const Data& d, const std::string& prefix);

std::string label(const std::string& prefix, Collective c, const std::string& name) {
  return prefix + std::string(smddp::to_string(c)) + " " + name;
}

// --- transfer-list algorithms, on a group of n ranks -----------------------

void reduce_scatter_ring(Builder& b, Kind k, const Partition& blocks, const std::string& ph) {
  const int n = group_size(b, k);
  const size_t es = b.es();
  for (int s = 0; s <= n - 2; ++s) {
    std::vector<Xfer> xs;
    uint64_t reduced = 0;
    for (int me = 0; me < n; ++me) {
      xs.push_back({me, patterns::ring_next(me, n), blocks.length(mod(me - s - 1, n)) * es});
      reduced = std::max<uint64_t>(reduced, blocks.length(mod(me - s - 2, n)) * es);
    }
    b.transfers(k, ph, xs, reduced);
  }
}

// reduce_scatter/recursive_halving.cc: halving-doubling's fix-up, log2 p
// exchanges of the half of its virtual ranks' blocks a rank gives away,
// then the sitting-out ranks' blocks back.
void reduce_scatter_recursive_halving(Builder& b, Kind k, const Partition& blocks, const std::string& ph) {
  const int n = group_size(b, k);
  const size_t es = b.es();
  const patterns::HalvingDoubling hd(n, b.hosts_of(k));
  std::vector<Xfer> fix;
  for (int r = 0; r < 2 * hd.extra; r += 2) fix.push_back({r, hd.fixup_partner(r), blocks.total * es});
  if (!fix.empty()) b.transfers(k, ph + " fix-up", fix, blocks.total * es);
  auto bytes_of = [&](int w) { return (blocks.offset(hd.first_block(w + 1)) - blocks.offset(hd.first_block(w))) * es; };
  auto sum = [&](const std::vector<int>& ws) {
    uint64_t t = 0;
    for (int w : ws) t += bytes_of(w);
    return t;
  };
  int done = 0;
  std::vector<int> keep, give;
  for (int mask : hd.masks) {
    std::vector<Xfer> xs;
    uint64_t reduced = 0;
    for (int v = 0; v < hd.pof2; ++v) {
      hd.split(v, done, mask, keep, give);
      xs.push_back({hd.real_rank(v), hd.real_rank(v ^ mask), sum(give)});
      reduced = std::max(reduced, sum(keep));
    }
    b.transfers(k, ph + " halving", xs, reduced);
    done |= mask;
  }
  for (Xfer& x : fix) {
    std::swap(x.src, x.dst);
    x.bytes = blocks.length(x.dst) * es;
  }
  if (!fix.empty()) b.transfers(k, ph + " fix-up", fix, 0);
}

void allgather_ring(Builder& b, Kind k, const Partition& blocks, const std::string& ph) {
  const int n = group_size(b, k);
  for (int s = 0; s <= n - 2; ++s) {
    std::vector<Xfer> xs;
    for (int me = 0; me < n; ++me) xs.push_back({me, patterns::ring_next(me, n), blocks.length(mod(me - s, n)) * b.es()});
    b.transfers(k, ph, xs, 0);
  }
}

void allgather_recursive_doubling(Builder& b, Kind k, const Partition& blocks, const std::string& ph) {
  const int n = group_size(b, k);
  for (int dist = 1; dist < n; dist <<= 1) {
    std::vector<Xfer> xs;
    for (int me = 0; me < n; ++me) {
      const int mine = me & ~(dist - 1);
      xs.push_back({me, me ^ dist, (blocks.offset(mine + dist) - blocks.offset(mine)) * b.es()});
    }
    b.transfers(k, ph, xs, 0);
  }
}

void allgather_direct(Builder& b, Kind k, const Partition& blocks, const std::string& ph) {
  const int n = group_size(b, k);
  if (n == 1) return;
  std::vector<Xfer> xs;
  for (int me = 0; me < n; ++me) {
    for (int j = 1; j < n; ++j) xs.push_back({me, mod(me + j, n), blocks.length(me) * b.es()});
  }
  b.transfers(k, ph, xs, 0);
}

// Binomial tree levels: the reduce goes up nearest child first (mask 1,
// 2, ...), the broadcast down farthest subtree first.
void tree_level(Builder& b, Kind k, int root, int mask, bool up, uint64_t bytes, const std::string& ph) {
  const int n = group_size(b, k);
  std::vector<Xfer> xs;
  for (int vr = 0; vr < n; ++vr) {
    if (vr % (2 * mask) != 0 || vr + mask >= n) continue;
    const int parent = mod(vr + root, n), child = mod(vr + mask + root, n);
    xs.push_back(up ? Xfer{child, parent, bytes} : Xfer{parent, child, bytes});
  }
  if (!xs.empty()) b.transfers(k, ph, xs, up ? bytes : 0);
}

void reduce_tree(Builder& b, Kind k, uint64_t bytes, int root, const std::string& ph) {
  for (int mask = 1; mask < group_size(b, k); mask <<= 1) tree_level(b, k, root, mask, true, bytes, ph);
}

void broadcast_tree(Builder& b, Kind k, uint64_t bytes, int root, const std::string& ph) {
  const int n = group_size(b, k);
  int top = 1;
  while (top < n) top <<= 1;
  for (int mask = top >> 1; mask >= 1; mask >>= 1) tree_level(b, k, root, mask, false, bytes, ph);
}

// broadcast/chain.cc: chunk i crosses hop p (chain position p to p+1) in
// step p+i, so step t runs every hop whose chunk t-p exists.
void broadcast_chain(Builder& b, Kind k, uint64_t count, int root, const std::string& ph) {
  const int n = group_size(b, k);
  const size_t es = b.es();
  const std::vector<int> order = patterns::chain_order(root, b.hosts_of(k), n);
  const int cut_as = b.options().cut_as_ranks > 0 ? b.options().cut_as_ranks : n;
  const uint64_t chunk = patterns::chain_chunk(count, es, cut_as);
  const uint64_t chunks = n > 1 ? ceil_div(count, chunk) : 0;
  // Steps n-2 .. chunks-2 run every hop with a whole chunk: alike. A proxy
  // cut as a far longer chain draws them once, repeated (tens of thousands).
  const uint64_t steady_from = n > 1 ? static_cast<uint64_t>(n - 2) : 0;
  const bool draw_steady_once = b.options().cut_as_ranks > 0 && chunks > steady_from + 1;  // n > 1 when chunks > 0
  for (uint64_t t = 0; chunks > 0 && t + 1 < chunks + n - 1; ++t) {
    std::vector<Xfer> xs;
    for (int p = 0; p + 1 < n; ++p) {
      if (t < static_cast<uint64_t>(p) || t - p >= chunks) continue;
      const uint64_t i = t - p;
      xs.push_back({order[p], order[p + 1], std::min(chunk, count - i * chunk) * es});
    }
    const uint64_t repeat = draw_steady_once && t == steady_from ? chunks - 1 - steady_from : 1;
    b.transfers(k, ph, xs, 0, repeat);
    t += repeat - 1;
  }
}

void allreduce_halving_doubling(Builder& b, Kind k, uint64_t count, const std::string& ph) {
  const int n = group_size(b, k);
  const size_t es = b.es();
  const patterns::HalvingDoubling hd(n, b.hosts_of(k));
  std::vector<Xfer> fix;
  for (int r = 0; r < 2 * hd.extra; r += 2) fix.push_back({r, hd.fixup_partner(r), count * es});
  if (!fix.empty()) b.transfers(k, ph + " fix-up", fix, count * es);
  const auto blocks = Partition::balanced(count, hd.pof2);
  // Per virtual rank, the block range [lo, hi) it still holds.
  std::vector<int> lo(hd.pof2, 0), hi(hd.pof2, hd.pof2);
  for (int mask : hd.masks) {
    std::vector<Xfer> xs;
    uint64_t reduced = 0;
    for (int v = 0; v < hd.pof2; ++v) {
      const int mid = lo[v] + (hi[v] - lo[v]) / 2;
      const bool keep_low = (v & mask) == 0;
      const int give_lo = keep_low ? mid : lo[v], give_hi = keep_low ? hi[v] : mid;
      xs.push_back({hd.real_rank(v), hd.real_rank(v ^ mask), (blocks.offset(give_hi) - blocks.offset(give_lo)) * es});
      const int keep_lo = keep_low ? lo[v] : mid, keep_hi = keep_low ? mid : hi[v];
      reduced = std::max<uint64_t>(reduced, (blocks.offset(keep_hi) - blocks.offset(keep_lo)) * es);
      lo[v] = keep_lo;
      hi[v] = keep_hi;
    }
    b.transfers(k, ph + " halving", xs, reduced);
  }
  for (auto m = hd.masks.rbegin(); m != hd.masks.rend(); ++m) {
    const int mask = *m;
    std::vector<Xfer> xs;
    std::vector<int> nlo(lo), nhi(hi);
    for (int v = 0; v < hd.pof2; ++v) {
      xs.push_back({hd.real_rank(v), hd.real_rank(v ^ mask), (blocks.offset(hi[v]) - blocks.offset(lo[v])) * es});
      const int width = hi[v] - lo[v];
      const int their_lo = (v & mask) ? lo[v] - width : hi[v];
      nlo[v] = std::min(lo[v], their_lo);
      nhi[v] = std::max(hi[v], their_lo + width);
    }
    lo = nlo;
    hi = nhi;
    b.transfers(k, ph + " doubling", xs, 0);
  }
  for (Xfer& x : fix) std::swap(x.src, x.dst);
  if (!fix.empty()) b.transfers(k, ph + " fix-up", fix, 0);
}

// allreduce/recursive_doubling.cc: halving-doubling's fix-up, then log2 p
// exchanges of the whole vector with partner v ^ mask, each reduced.
void allreduce_recursive_doubling(Builder& b, Kind k, uint64_t count, const std::string& ph) {
  const patterns::HalvingDoubling hd(group_size(b, k));
  const uint64_t bytes = count * b.es();
  std::vector<Xfer> fix;
  for (int r = 0; r < 2 * hd.extra; r += 2) fix.push_back({r, hd.fixup_partner(r), bytes});
  if (!fix.empty()) b.transfers(k, ph + " fix-up", fix, bytes);
  for (int mask = 1; mask < hd.pof2; mask *= 2) {
    std::vector<Xfer> xs;
    for (int v = 0; v < hd.pof2; ++v) xs.push_back({hd.real_rank(v), hd.real_rank(v ^ mask), bytes});
    b.transfers(k, ph + " exchange", xs, bytes);
  }
  for (Xfer& x : fix) std::swap(x.src, x.dst);
  if (!fix.empty()) b.transfers(k, ph + " fix-up", fix, 0);
}

// sharded.cc's ShardServer on the cross groups (or the world's one rank
// per node): contributions to every sub-shard's server, then the results
// back, pipelined in 2 MiB chunks (one message each).
void shard_server(Builder& b, Kind k, uint64_t len, const std::string& ph) {
  const int m = group_size(b, k);
  if (m < 2 || len == 0) return;
  const size_t es = b.es();
  const auto sub = Partition::balanced(len, m);
  const uint64_t chunk = std::max<uint64_t>(1, kShardedChunkBytes / es);
  const uint64_t chunks = ceil_div(sub.max_length(), chunk);
  std::vector<Xfer> contrib, results;
  for (int me = 0; me < m; ++me) {
    for (int j = 1; j < m; ++j) {
      const int to = mod(me + j, m);
      contrib.push_back({me, to, sub.length(to) * es, chunks});
      results.push_back({me, to, sub.length(me) * es, chunks});
    }
  }
  b.transfers(k, ph + " contributions", contrib, (m - 1) * sub.max_length() * es);
  b.transfers(k, ph + " results", results, 0);
}

void pairwise(Builder& b, Kind k, uint64_t block_bytes, const std::string& ph) {
  const int n = group_size(b, k);
  for (int s = 1; s < n; ++s) {
    std::vector<Xfer> xs;
    for (int me = 0; me < n; ++me) xs.push_back({me, patterns::pairwise_send_peer(me, s, n), block_bytes});
    b.transfers(k, ph, xs, 0);
  }
}

// --- shared-memory algorithms: one node group per host, chunk loops --------

void shm_direct(Builder& b, Collective c, const Data& d, const std::string& ph) {
  const int n = b.topo().ranks_per_host;
  const uint64_t es = b.es();
  const uint64_t chunk = std::max<uint64_t>(1, b.options().shm_slot_bytes / es);
  // Reduce-scatter and alltoall stage a chunk of every block in one stage buffer.
  const uint64_t block_chunk = std::max<uint64_t>(1, b.options().shm_slot_bytes / (es * n));
  switch (c) {
    case Collective::AllReduce:
    case Collective::Reduce:
      for (uint64_t off = 0; off < d.count; off += chunk) {
        const uint64_t cnt = std::min(chunk, d.count - off);
        // The reduce replicates tiny chunks only; the allreduce also at 2 ranks.
        const bool few = c == Collective::AllReduce && n <= shm_direct::kReplicatedReduceRanks;
        if (few || cnt * es <= shm_direct::kReplicatedReduceBytes) {
          b.shm(ph, cnt * es, 1, (n - 1) * cnt * es);  // stage, everyone reduces it all
          continue;
        }
        const uint64_t slice = Partition::balanced(cnt, n).max_length() * es;
        b.shm(ph + " stage+reduce", cnt * es, 1, (n - 1) * slice);
        b.shm(ph + " copy out", cnt * es, 1, 0);
      }
      return;
    case Collective::AllGather:
      for (uint64_t off = 0; off < d.blocks.max_length(); off += chunk) {
        const uint64_t cnt = std::min(chunk, d.blocks.max_length() - off);
        b.shm(ph, n * cnt * es, 1, 0);  // stage ours, copy n-1 out
      }
      return;
    case Collective::ReduceScatter:
      for (uint64_t off = 0; off < d.blocks.max_length(); off += block_chunk) {
        const uint64_t cnt = std::min(block_chunk, d.blocks.max_length() - off);
        b.shm(ph, n * cnt * es, 1, (n - 1) * cnt * es);  // stage a chunk of every block
      }
      return;
    case Collective::Broadcast:
      for (uint64_t off = 0; off < d.count; off += chunk) b.shm(ph, std::min(chunk, d.count - off) * es, 1, 0);
      return;
    case Collective::AllToAll:
      for (uint64_t off = 0; off < d.count; off += block_chunk) {
        const uint64_t cnt = std::min(block_chunk, d.count - off);
        b.shm(ph, 2 * n * cnt * es, 1, 0);  // stage n chunks, copy n out (our own too)
      }
      return;
    case Collective::Barrier:
      b.shm(ph, 0, 1, 0);
      return;
    default:
      return;
  }
}

// One step each; `messages` are single copies (none of zero bytes).
void cma(Builder& b, Collective c, const Data& d, const std::string& ph) {
  const int n = b.topo().ranks_per_host;
  const uint64_t es = b.es();
  auto copies = [](uint64_t bytes, uint64_t count) { return bytes ? count : 0; };
  switch (c) {
    case Collective::AllReduce: {
      const uint64_t bytes = d.count * es;
      if (n == 2 && bytes <= kCmaReplicatedUpTo) {
        b.shm(ph + " replicated", bytes, ceil_div(bytes, kCmaChunkBytes), bytes);
        return;
      }
      // Per chunk of its slice a rank reads it from every peer's input and
      // writes the result into every peer's output.
      const uint64_t slice = Partition::balanced(d.count, n).max_length() * es;
      const uint64_t chunks = ceil_div(slice, kCmaChunkBytes);
      b.shm(ph + " reduce and write slice", 2 * (n - 1) * slice, 2 * (n - 1) * chunks, (n - 1) * slice);
      return;
    }
    case Collective::AllGather: {
      const uint64_t block = d.blocks.max_length() * es;
      b.shm(ph, (n - 1) * block, copies(block, n - 1), 0);
      return;
    }
    case Collective::Broadcast:
      b.shm(ph, d.count * es, copies(d.count * es, 1), 0);
      return;
    case Collective::AllToAll:
      b.shm(ph, (n - 1) * d.count * es, copies(d.count * es, n - 1), 0);
      return;
    default:
      return;
  }
}

// hierarchical and sharded (allreduce/node_phases.h): reduce-scatter in
// each node, the cross step on this rank's block, allgather in the node.
void node_phases(Builder& b, const Data& d, bool sharded, const std::string& ph) {
  const int K = b.topo().ranks_per_host;
  const auto blocks = Partition::balanced(d.count, K);
  Data node;
  node.blocks = blocks;
  const uint64_t node_bytes = d.count * b.es();
  run(b, Collective::ReduceScatter, choose(b, Collective::ReduceScatter, Kind::Node, node_bytes), Kind::Node, node,
      ph + "node ");
  // Cross group i (local rank i on every host) reduces block i; blocks of
  // one length run alike, and each chooses by its own size, as the engine.
  std::map<uint64_t, std::vector<int>> by_length;
  for (int i = 0; i < K; ++i) by_length[blocks.length(i)].push_back(i);
  std::vector<uint64_t> lengths;
  std::vector<std::vector<int>> classes;
  for (auto it = by_length.rbegin(); it != by_length.rend(); ++it) {  // the longest block's phase names first
    lengths.push_back(it->first);
    classes.push_back(it->second);
  }
  b.classes(Kind::Cross, classes, [&](size_t c) {
    Data cross;
    cross.count = lengths[c];
    if (sharded) {
      shard_server(b, Kind::Cross, cross.count, ph + "cross sharded");
    } else {
      run(b, Collective::AllReduce, choose(b, Collective::AllReduce, Kind::Cross, cross.count * b.es()), Kind::Cross,
          cross, ph + "cross ");
    }
  });
  run(b, Collective::AllGather, choose(b, Collective::AllGather, Kind::Node, node_bytes), Kind::Node, node,
      ph + "node ");
}

void run(Builder& b, Collective c, const std::string& name, Kind k, const Data& d, const std::string& prefix) {
  const int n = group_size(b, k);
  const std::string ph = label(prefix, c, name);
  const uint64_t es = b.es();
  if (name == "shm_direct" || name == "shm") return shm_direct(b, c, d, ph);
  if (name == "cma") return cma(b, c, d, ph);
  switch (c) {
    case Collective::AllReduce:
      if (name == "ring") {
        const auto blocks = Partition::balanced(d.count, n);
        reduce_scatter_ring(b, k, blocks, ph + " reduce_scatter");
        allgather_ring(b, k, blocks, ph + " allgather");
      } else if (name == "halving_doubling") {
        allreduce_halving_doubling(b, k, d.count, ph);
      } else if (name == "recursive_doubling") {
        allreduce_recursive_doubling(b, k, d.count, ph);
      } else if (name == "tree") {
        reduce_tree(b, k, d.count * es, 0, ph + " reduce");
        broadcast_tree(b, k, d.count * es, 0, ph + " broadcast");
      } else if (name == "hierarchical") {
        node_phases(b, d, false, prefix);
      } else if (name == "sharded") {
        if (k == Kind::Cross) return shard_server(b, k, d.count, ph);
        node_phases(b, d, true, prefix);
      }
      return;
    case Collective::ReduceScatter:
      if (name == "recursive_halving") return reduce_scatter_recursive_halving(b, k, d.blocks, ph);
      return reduce_scatter_ring(b, k, d.blocks, ph);
    case Collective::AllGather:
      if (name == "ring") return allgather_ring(b, k, d.blocks, ph);
      if (name == "recursive_doubling") return allgather_recursive_doubling(b, k, d.blocks, ph);
      return allgather_direct(b, k, d.blocks, ph);
    case Collective::Broadcast:
      if (name == "chain") return broadcast_chain(b, k, d.count, 0, ph);
      return broadcast_tree(b, k, d.count * es, 0, ph);
    case Collective::Reduce:
      return reduce_tree(b, k, d.count * es, 0, ph);
    case Collective::AllToAll:
    case Collective::AllToAllV:  // uniform weights: as alltoall
      return pairwise(b, k, d.count * es, ph);
    case Collective::Gather:
    case Collective::Scatter: {
      if (n == 1) return;
      std::vector<Xfer> xs;
      for (int r = 1; r < n; ++r) {
        xs.push_back(c == Collective::Gather ? Xfer{r, 0, d.count * es} : Xfer{0, r, d.count * es});
      }
      return b.transfers(k, ph, xs, 0);
    }
    case Collective::SendRecv: {
      if (n == 1) return;
      std::vector<Xfer> xs;
      for (int me = 0; me < n; ++me) xs.push_back({me, patterns::ring_next(me, n), d.count * es});
      return b.transfers(k, ph, xs, 0);
    }
    case Collective::Barrier:
      for (int dist = 1; dist < n; dist <<= 1) {
        std::vector<Xfer> xs;
        for (int me = 0; me < n; ++me) xs.push_back({me, mod(me + dist, n), 1});
        b.transfers(k, ph, xs, 0);
      }
      return;
  }
}

// The row's size in elements, as the top-level call's Data (smddp-bench's
// row_counts: the larger buffer, split by the ranks where it is split).
Data top_data(Collective c, uint64_t bytes, size_t es, int n) {
  const uint64_t elements = bytes / es;
  Data d;
  switch (c) {
    case Collective::AllGather:
    case Collective::ReduceScatter:
      d.blocks = Partition::equal(elements / n, n);
      d.count = elements / n;
      break;
    case Collective::AllToAll:
    case Collective::AllToAllV:
    case Collective::Gather:
    case Collective::Scatter:
      d.count = elements / n;
      break;
    default:
      d.count = elements;
  }
  return d;
}

}  // namespace

std::string_view to_string(Tier t) { return t == Tier::Shm ? "shm" : "network"; }

std::vector<std::string> algorithms(Collective c) {
  std::vector<std::string> out;
  for (const AlgorithmInfo& a : list_algorithms()) {
    if (a.collective == c && a.host_memory) out.emplace_back(a.name);
  }
  return out;
}

namespace {

Schedule make_in(const Selector& selector, Collective c, std::string_view algorithm, const Topology& topo, Kind group,
                 uint64_t bytes, size_t dtype_size, const Options& options, std::vector<Transfer>* transfers) {
  if (topo.hosts < 1 || topo.ranks_per_host < 1) throw UsageError("schedule: hosts and ranks per host must be >= 1");
  if (dtype_size == 0) throw UsageError("schedule: the element size must be > 0");
  if (group == Kind::Node) throw UsageError("schedule: node groups are drawn inside the algorithms that use them");
  Schedule s;
  if (transfers) transfers->clear();
  Builder b(topo, dtype_size, options, selector, s.steps, transfers);
  const Data d = top_data(c, bytes, dtype_size, group_size(b, group));
  std::string name(algorithm);
  if (name == "auto") {
    name = choose(b, c, group, bytes);
  } else {
    const auto known = algorithms(c);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw UsageError("schedule: no " + std::string(smddp::to_string(c)) + " algorithm named '" + name + "'");
    }
  }
  s.algorithm = name;
  if (name.empty()) {
    s.declined = "no algorithm can run it";
    return s;
  }
  if (const char* why = declines(b, c, name, group, bytes)) {
    s.declined = why;
    return s;
  }
  run(b, c, name, group, d, "");
  return s;
}

}  // namespace

Schedule make(Collective c, std::string_view algorithm, const Topology& topo, uint64_t bytes, size_t dtype_size,
              const Options& options, std::vector<Transfer>* transfers) {
  // Without a model the engine takes the fallback table (selector.cc).
  static const Selector fallback(default_rules());
  return make_in(fallback, c, algorithm, topo, Kind::World, bytes, dtype_size, options, transfers);
}

CallShape modelled_shape(Collective c, GroupKind group, const Topology& topo, uint64_t bytes, const Options& options) {
  CallShape s;
  s.collective = c;
  s.group = group;
  s.group_size = group == Kind::World ? topo.ranks() : group == Kind::Node ? topo.ranks_per_host : topo.hosts;
  s.nodes = topo.hosts;
  s.ranks_per_node = topo.ranks_per_host;
  s.uniform_nodes = true;  // ranks_per_host on every host
  s.bytes = bytes;
  s.memory = MemoryKind::Host;
  s.dedicated_cores = options.dedicated_cores;
  s.cma = options.cma;
  return s;
}

Schedule make_for(const Selector& selector, Collective c, std::string_view algorithm, const Topology& topo,
                  GroupKind group, uint64_t bytes, size_t dtype_size, const Options& options,
                  std::vector<Transfer>* transfers) {
  return make_in(selector, c, algorithm, topo, group, bytes, dtype_size, options, transfers);
}

}  // namespace smddp::schedule
