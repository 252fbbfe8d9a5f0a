// Ranks as threads of one test process: a bootstrap just big enough for a
// node's shared-memory segment (allgather, barrier), and the topology of
// hosts x per_host such ranks. Used by the tests that run engine pieces
// without MPI (schedule_transfers_test, shm_segment_test).
#pragma once

#include <unistd.h>

#include <barrier>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "smddp/error.h"

namespace smddp::test {

// The bootstrap of ranks that are threads: just enough for the node's shm
// segment (allgather, barrier).
class ThreadBootstrap final : public Bootstrap {
 public:
  struct Shared {
    explicit Shared(int n) : sync(n), size(n) {}
    std::barrier<> sync;
    int size;
    std::vector<char> buffer;
  };
  ThreadBootstrap(Shared& s, int rank) : s_(s), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return s_.size; }
  void allgather(const void* in, void* out, size_t bytes) override {
    s_.sync.arrive_and_wait();
    if (rank_ == 0) s_.buffer.resize(bytes * s_.size);
    s_.sync.arrive_and_wait();
    std::memcpy(s_.buffer.data() + bytes * rank_, in, bytes);
    s_.sync.arrive_and_wait();
    std::memcpy(out, s_.buffer.data(), bytes * s_.size);
    s_.sync.arrive_and_wait();
  }
  void barrier() override { s_.sync.arrive_and_wait(); }
  int shared_memory_key() override { return 0; }
  std::unique_ptr<Transport> make_network_transport() override { throw Error("not in this test"); }

 private:
  Shared& s_;
  int rank_;
};

struct Layout {
  int hosts, per_host;
};

inline Topology topology(Layout p, int rank) {
  Topology t;
  t.rank = rank;
  t.size = p.hosts * p.per_host;
  t.node = rank / p.per_host;
  t.num_nodes = p.hosts;
  t.local_rank = rank % p.per_host;
  t.local_size = p.per_host;
  t.node_ranks.assign(p.hosts, {});
  for (int r = 0; r < t.size; ++r) {
    t.hosts.push_back("host" + std::to_string(r / p.per_host));
    t.pids.push_back(getpid());
    t.node_of.push_back(r / p.per_host);
    t.node_ranks[r / p.per_host].push_back(r);
  }
  return t;
}

}  // namespace smddp::test
