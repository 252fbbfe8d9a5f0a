// The step builder of smddp/schedule.h's schedules: an algorithm's
// transfers, in group indices, become Steps (tier, busiest rank, busiest
// link), for every group of a kind at once (the world, each host's ranks,
// or the cross-node groups). schedule.cc's algorithms emit transfers into
// it; they mirror the engine's own loops.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "algorithms/selector.h"
#include "smddp/error.h"
#include "smddp/schedule.h"

namespace smddp::schedule::detail {

using Kind = GroupKind;

// A transfer inside a group, in group indices.
struct Xfer {
  int src, dst;
  uint64_t bytes;
  uint64_t messages = 1;
};

inline uint64_t ceil_div(uint64_t a, uint64_t b) { return b ? (a + b - 1) / b : 0; }

class Builder {
 public:
  Builder(const Topology& t, size_t es, const Options& o, const Selector& sel, std::vector<Step>& out,
          std::vector<Transfer>* record)
      : topo_(t), es_(es), opt_(o), sel_(sel), out_(out), record_(record) {}

  const Topology& topo() const { return topo_; }
  const Selector& selector() const { return sel_; }
  size_t es() const { return es_; }
  const Options& options() const { return opt_; }

  // The groups of a kind, all running at once: the world; each host's
  // ranks; or, per local rank i, the ranks with local rank i on every host.
  std::vector<std::vector<int>> groups(Kind k) const {
    const int H = topo_.hosts, K = topo_.ranks_per_host;
    std::vector<std::vector<int>> gs;
    if (k == Kind::World) {
      gs.emplace_back();
      for (int r = 0; r < H * K; ++r) gs.back().push_back(r);
    } else if (k == Kind::Node) {
      for (int h = 0; h < H; ++h) {
        gs.emplace_back();
        for (int i = 0; i < K; ++i) gs.back().push_back(h * K + i);
      }
    } else {
      for (int i = 0; i < K; ++i) {
        gs.emplace_back();
        for (int h = 0; h < H; ++h) gs.back().push_back(h * K + i);
      }
    }
    return gs;
  }

  // Host by group index (every group of a kind sits alike).
  std::vector<int> hosts_of(Kind k) const {
    const auto gs = groups(k);
    std::vector<int> h;
    for (int r : gs.front()) h.push_back(r / topo_.ranks_per_host);
    return h;
  }

  // One step of `xs` run by every group of `k` at once (by the groups of
  // the class being run, inside classes()).
  // `repeat`: the same step that many times in a row (Step::repeat).
  void transfers(Kind k, std::string phase, const std::vector<Xfer>& xs, uint64_t reduced, uint64_t repeat = 1) {
    if (pending_) {
      if (repeat != 1) throw Error("schedule: a repeated step inside classes()");
      pending_->push_back({k, std::move(phase), xs, reduced, class_});
      return;
    }
    emit(k, phase, {{&xs, nullptr}}, reduced);
    out_.back().repeat = repeat;
  }

  // Groups of kind `k` that run at once but on different data (the cross
  // groups of hierarchical and sharded each reduce their own node block,
  // whose lengths differ by an element): `each(c)` emits the steps of the
  // groups in classes[c]; step j of every class is one step.
  template <typename Each>
  void classes(Kind k, const std::vector<std::vector<int>>& classes, Each&& each) {
    std::vector<std::vector<Pending>> runs(classes.size());
    for (size_t c = 0; c < classes.size(); ++c) {
      pending_ = &runs[c];
      class_ = classes[c];
      each(c);
    }
    pending_ = nullptr;
    class_.clear();
    for (size_t j = 0;; ++j) {
      std::vector<Part> parts;
      const Pending* first = nullptr;
      uint64_t reduced = 0;
      for (const auto& run : runs) {
        if (j >= run.size()) continue;
        if (run[j].kind != k) throw Error("schedule: a class ran steps on another kind of group");
        if (!first) first = &run[j];
        parts.push_back({&run[j].xs, &run[j].groups});
        reduced = std::max(reduced, run[j].reduced);
      }
      if (!first) return;
      emit(k, first->phase, parts, reduced);
    }
  }

 private:
  struct Part {
    const std::vector<Xfer>* xs;
    const std::vector<int>* groups;  // indices into groups(k); nullptr: all
  };
  struct Pending {
    Kind kind;
    std::string phase;
    std::vector<Xfer> xs;
    uint64_t reduced;
    std::vector<int> groups;
  };

  void emit(Kind k, const std::string& phase, const std::vector<Part>& parts, uint64_t reduced) {
    const auto gs = groups(k);
    const int K = topo_.ranks_per_host;
    // Calls f(src, dst, xfer) for every transfer of the step, in world ranks.
    auto each = [&](auto&& f) {
      for (const Part& p : parts) {
        auto one = [&](const std::vector<int>& g) {
          for (const Xfer& x : *p.xs) f(g[x.src], g[x.dst], x);
        };
        if (p.groups) {
          for (int i : *p.groups) one(gs[i]);
        } else {
          for (const auto& g : gs) one(g);
        }
      }
    };
    bool network = false;
    each([&](int s, int d, const Xfer&) { network |= s / K != d / K; });
    // Per world rank and per host; vectors, not maps: 512 hosts x 8 ranks
    // make a ring of 8190 steps of 4096 transfers.
    const size_t ranks = static_cast<size_t>(topo_.ranks()), hosts = static_cast<size_t>(topo_.hosts);
    std::vector<uint64_t> sent(ranks, 0), msgs(ranks, 0), out(hosts, 0), in(hosts, 0);
    std::vector<int> copiers(hosts, 0);
    each([&](int s, int d, const Xfer& x) {
      if (record_) record_->push_back({out_.size(), s, d, x.bytes, x.messages});
      const bool cross = s / K != d / K;
      if (network != cross) return;  // a network step's shm transfers overlap it
      if (msgs[s] == 0) ++copiers[s / K];
      sent[s] += x.bytes;
      msgs[s] += x.messages;
      out[s / K] += x.bytes;
      in[d / K] += x.bytes;
    });
    Step st;
    st.tier = network ? Tier::Network : Tier::Shm;
    st.phase = phase;
    st.reduced = reduced;
    st.bytes = *std::max_element(sent.begin(), sent.end());
    st.messages = *std::max_element(msgs.begin(), msgs.end());
    if (network) {
      const uint64_t link = std::max(*std::max_element(out.begin(), out.end()), *std::max_element(in.begin(), in.end()));
      st.flows = st.bytes ? std::max(1.0, static_cast<double>(link) / static_cast<double>(st.bytes)) : 1.0;
    } else {
      st.flows = std::max(1, *std::max_element(copiers.begin(), copiers.end()));
    }
    out_.push_back(std::move(st));
  }

 public:
  // A step of an intra-node shared-memory algorithm (all hosts at once).
  void shm(std::string phase, uint64_t bytes, uint64_t messages, uint64_t reduced) {
    Step st;
    st.tier = Tier::Shm;
    st.bytes = bytes;
    st.messages = messages;
    st.reduced = reduced;
    st.flows = topo_.ranks_per_host;
    st.phase = std::move(phase);
    out_.push_back(std::move(st));
  }

 private:
  Topology topo_;
  size_t es_;
  Options opt_;
  const Selector& sel_;  // the nested steps' choices
  std::vector<Step>& out_;
  std::vector<Transfer>* record_;
  std::vector<Pending>* pending_ = nullptr;  // inside classes(): the class's steps
  std::vector<int> class_;                   // inside classes(): its groups
};

}  // namespace smddp::schedule::detail
