#include "algorithms/context.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "algorithms/selector.h"
#include "smddp/error.h"
#include "smddp/traits.h"

namespace smddp {

size_t Call::bytes(int group_size) const {
  const CollectiveTraits& t = traits(collective);
  if (t.per_peer()) return 0;
  // Composite algorithms pass n-block buffers as a (maybe balanced) partition.
  auto elements = [&](Extent e) {
    return e == Extent::Ranks && blocks.total ? blocks.total : extent_elements(e, count, group_size);
  };
  return std::max(elements(t.send), elements(t.recv)) * esize();
}

void Scratch::Free::operator()(void* p) const { std::free(p); }

void* Scratch::raw(ScratchSlot which, size_t bytes) {
  const int slot = static_cast<int>(which);
  if (bytes > sizes_[slot]) {
    // Grow geometrically so sweeps over sizes do not reallocate every call.
    size_t want = std::max(bytes, sizes_[slot] * 2);
    void* p = nullptr;
    if (posix_memalign(&p, 4096, want) != 0) {
      throw Error("cannot allocate " + std::to_string(want) + " bytes of scratch memory");
    }
    buffers_[slot].reset(p);
    sizes_[slot] = want;
  }
  return buffers_[slot].get();
}

namespace {

bool same_rank_counts(const Topology& t) {
  for (const auto& ranks : t.node_ranks) {
    if (ranks.size() != t.node_ranks[0].size()) return false;
  }
  return true;
}

}  // namespace

Context::Context(Router& router, const Topology& t, ShmSteps* s, const Selector& selector)
    : topo(t), steps(s), uniform_nodes(same_rank_counts(t)), router_(router), selector_(selector) {}

void Context::exchange(const Group& g, int to, const void* sbuf, size_t sbytes, int from,
                       void* rbuf, size_t rbytes) {
  Request r[2];
  r[0] = Request{Request::Kind::Send, g.ranks[to], tag, const_cast<void*>(sbuf), sbytes};
  r[1] = Request{Request::Kind::Recv, g.ranks[from], tag, rbuf, rbytes};
  router_.post(r[1]);
  router_.post(r[0]);
  router_.wait(r, scope);
}

void Context::send(const Group& g, int to, const void* buf, size_t bytes) {
  Request r{Request::Kind::Send, g.ranks[to], tag, const_cast<void*>(buf), bytes};
  router_.post(r);
  router_.wait({&r, 1}, scope);
}

void Context::recv(const Group& g, int from, void* buf, size_t bytes) {
  Request r{Request::Kind::Recv, g.ranks[from], tag, buf, bytes};
  router_.post(r);
  router_.wait({&r, 1}, scope);
}

std::string_view Context::run(const Group& g, const Call& call, std::string_view algorithm) {
  const Algorithm& a = selector_.choose(shape_of(*this, g, call), algorithm);
  a.run(*this, g, call);
  return a.info.name;
}

std::string_view Context::run(const Group& g, const Call& call, const Algorithm& a) {
  check_forced(a, shape_of(*this, g, call));
  a.run(*this, g, call);
  return a.info.name;
}

std::vector<int> Context::nodes_of(const Group& g) const {
  std::vector<int> out;
  for (int r : g.ranks) out.push_back(topo.node_of[r]);
  return out;
}

void copy_if_distinct(void* dst, const void* src, size_t bytes) {
  if (dst != src && bytes) std::memmove(dst, src, bytes);
}

}  // namespace smddp
