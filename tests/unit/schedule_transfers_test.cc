// Schedules (smddp/schedule.h) against what the algorithms really do. Every
// host algorithm of the registry runs on every placement below, its ranks
// as threads of this process over an in-memory transport that records each
// message, and the schedule of the same call must list the same transfers:
// per (src, dst) pair, its steps in order, each step's messages and bytes.
// The shared-memory algorithms (shm_direct, shm, cma) send no messages:
// their schedule steps are compared with the synchronisations each rank
// announces in the shm step protocol (ShmSteps::announcements), and the
// single-copy ones' copies (cross-memory attach, replaced here by memcpy
// through the linker's --wrap, see tests/CMakeLists.txt) with their step's
// busiest rank's copies and bytes. What the shm_direct steps copy through
// the segment is not recorded (plain memcpy).
#include <gtest/gtest.h>

#include <barrier>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "algorithms/context.h"
#include "algorithms/registry.h"
#include "algorithms/selector.h"
#include "algorithms/shm_steps.h"
#include "smddp/communicator.h"
#include "smddp/error.h"
#include "smddp/schedule.h"
#include "smddp/traits.h"
#include "transports/shm_segment.h"
#include "thread_ranks.h"

using namespace smddp;
using namespace smddp::test;

namespace {

// Small shm stage buffers: several chunks (steps) at small sizes. The
// schedule is told the same (schedule::Options::shm_slot_bytes).
constexpr size_t kSlotBytes = 8192;
constexpr double kTimeoutSeconds = 30;  // a hang fails the test instead of stalling it

// The cross-memory-attach copies of the running call, per world rank.
struct Copies {
  uint64_t count = 0, bytes = 0;
};
std::mutex copies_mutex;
std::map<int, Copies>* copies = nullptr;  // set while a call runs

void count_copy(const Topology& topo, size_t bytes) {
  std::lock_guard lock(copies_mutex);
  if (!copies) return;
  Copies& c = (*copies)[topo.rank];
  ++c.count;
  c.bytes += bytes;
}

}  // namespace

// The engine's cma_read/cma_write, for this binary: the ranks share one
// address space, so a copy is a memcpy (process_vm_readv may be refused in
// containers), and each copy is counted.
extern "C" void __wrap__ZN5smddp8cma_readEiPvPKvmiRKNS_8TopologyE(int, void* local, const void* remote, size_t bytes,
                                                                  int, const Topology& topo) {
  std::memcpy(local, remote, bytes);
  count_copy(topo, bytes);
}
extern "C" void __wrap__ZN5smddp9cma_writeEiPvPKvmiRKNS_8TopologyE(int, void* remote, const void* local, size_t bytes,
                                                                   int, const Topology& topo) {
  std::memcpy(remote, local, bytes);
  count_copy(topo, bytes);
}

namespace {

struct Sent {
  int src, dst;
  size_t bytes;
  bool network;  // went through the network transport (else the node's)
};

// Messages in flight between ranks, eagerly copied at the send.
class Mailbox {
 public:
  void put(int src, int dst, int tag, const void* buf, size_t bytes) {
    std::lock_guard lock(m_);
    const char* p = static_cast<const char*>(buf);
    queues_[{src, dst}].push_back({tag, std::vector<char>(p, p + bytes)});
  }
  // Completes the receive when the pair's next message is there.
  bool take(int src, int dst, Request& r) {
    std::lock_guard lock(m_);
    auto& q = queues_[{src, dst}];
    if (q.empty()) return false;
    if (q.front().tag != r.tag || q.front().data.size() != r.bytes) {
      throw Error("rank " + std::to_string(dst) + " receives " + std::to_string(r.bytes) + " bytes (tag " +
                  std::to_string(r.tag) + ") from " + std::to_string(src) + ", which sent " +
                  std::to_string(q.front().data.size()) + " (tag " + std::to_string(q.front().tag) + ")");
    }
    if (r.bytes) std::memcpy(r.buf, q.front().data.data(), r.bytes);
    q.pop_front();
    return true;
  }

 private:
  struct Message {
    int tag;
    std::vector<char> data;
  };
  std::mutex m_;
  std::map<std::pair<int, int>, std::deque<Message>> queues_;
};

// One rank's transport to a set of peers (the node's or the network's):
// sends complete at once, receives in posting order as messages arrive.
class RecordingTransport final : public Transport {
 public:
  RecordingTransport(Mailbox& box, int me, bool network, std::vector<Sent>& log)
      : box_(box), me_(me), network_(network), log_(log) {}
  std::string_view name() const override { return network_ ? "recording-network" : "recording-node"; }
  void post(Request& r) override {
    if (r.kind == Request::Kind::Send) {
      box_.put(me_, r.peer, r.tag, r.buf, r.bytes);
      log_.push_back({me_, r.peer, r.bytes, network_});
      r.done = true;
      return;
    }
    pending_.push_back(&r);
  }
  void progress() override {
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (box_.take((*it)->peer, me_, **it)) {
        (*it)->done = true;
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
  }
  void check_peer(int) override {}

 private:
  Mailbox& box_;
  int me_;
  bool network_;
  std::vector<Sent>& log_;
  std::deque<Request*> pending_;
};

Group group(GroupKind kind, std::vector<int> ranks, int world_rank) {
  Group g{kind, std::move(ranks), 0};
  for (int i = 0; i < g.size(); ++i) {
    if (g.ranks[i] == world_rank) g.me = i;
  }
  return g;
}

// The call of the schedule's row of `row_bytes` (schedule.cc's top_data):
// `count` as the communicator's argument, float32 elements.
struct Row {
  size_t count;
  uint64_t row_bytes;
};
constexpr size_t kEs = 4;

Row row_of(Collective c, size_t count, int n) {
  const CollectiveTraits& t = traits(c);
  if (t.send == Extent::None && t.recv == Extent::None) return {0, 0};
  const bool per_rank = c == Collective::AllGather || c == Collective::ReduceScatter || c == Collective::AllToAll ||
                        c == Collective::AllToAllV || c == Collective::Gather || c == Collective::Scatter;
  return {count, count * kEs * (per_rank ? static_cast<uint64_t>(n) : 1)};
}

// What one run did.
struct Observed {
  std::string declined;  // the engine's reason, when it declined
  std::vector<Sent> sent;
  std::vector<uint64_t> announcements;  // per rank
  std::map<int, Copies> copies;
};

Observed run_threads(const Algorithm& alg, Layout p, size_t count) {
  const int n = p.hosts * p.per_host;
  const Collective c = alg.info.collective;
  static const Selector selector(default_rules());
  Mailbox box;
  ThreadBootstrap::Shared shared(n);
  std::vector<std::vector<Sent>> logs(n);
  std::vector<std::string> errors(n), declines(n);
  Observed out;
  out.announcements.assign(n, 0);
  std::map<int, Copies> cma;
  {
    std::lock_guard lock(copies_mutex);
    copies = &cma;
  }
  auto rank_main = [&](int rank) {
    try {
      const Topology topo = topology(p, rank);
      ThreadBootstrap bootstrap(shared, rank);
      std::unique_ptr<ShmSegment> segment;
      if (p.per_host > 1) segment = ShmSegment::create_for_node(bootstrap, topo);
      RecordingTransport local(box, rank, false, logs[rank]), network(box, rank, true, logs[rank]);
      Router router(topo, p.per_host > 1 ? &local : nullptr, p.hosts > 1 ? &network : nullptr);
      std::unique_ptr<ShmSteps> steps;
      if (segment) steps = std::make_unique<ShmSteps>(*segment, router, topo);
      Context ctx(router, topo, steps.get(), selector);
      ctx.cma = true;
      std::vector<int> all(n);
      for (int r = 0; r < n; ++r) all[r] = r;
      ctx.world = group(GroupKind::World, all, rank);
      ctx.node = group(GroupKind::Node, topo.node_ranks[topo.node], rank);
      std::vector<int> cross;
      for (const auto& ranks : topo.node_ranks) cross.push_back(ranks[topo.local_rank]);
      ctx.cross = group(GroupKind::Cross, cross, rank);
      ctx.scope = WaitScope{to_string(c), Deadline(kTimeoutSeconds), kTimeoutSeconds, 1, true};
      ctx.tag = 1;

      std::vector<size_t> per_peer(n, count);
      const BufferCounts need = buffer_counts(c, count, n, per_peer.data(), per_peer.data());
      std::vector<float> send(need.send + 1, 1.0f), recv(need.recv + 1, 0.0f);
      Call call;
      call.collective = c;
      call.send = send.data();
      call.recv = recv.data();
      call.count = traits(c).send == Extent::None ? 0 : count;
      call.dtype = DataType::Float32;
      call.root = 0;
      if (traits(c).send == Extent::Ranks || traits(c).recv == Extent::Ranks) {
        call.blocks = patterns::Partition::equal(count, n);
      }
      if (traits(c).per_peer()) {
        call.send_counts = per_peer.data();
        call.recv_counts = per_peer.data();
      }
      try {
        ctx.run(ctx.world, call, alg);
      } catch (const UsageError& e) {
        declines[rank] = e.what();
      }
      if (steps) out.announcements[rank] = steps->announcements();
      // No rank tears down its segment while a peer may still read it.
      bootstrap.barrier();
    } catch (const std::exception& e) {
      errors[rank] = e.what();
      // Peers in a bootstrap barrier go on without this rank; those waiting
      // for its messages time out and fail too.
      shared.sync.arrive_and_drop();
    }
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back(rank_main, r);
  for (auto& t : threads) t.join();
  {
    std::lock_guard lock(copies_mutex);
    copies = nullptr;
  }
  for (int r = 0; r < n; ++r) {
    if (!errors[r].empty()) throw std::runtime_error("rank " + std::to_string(r) + ": " + errors[r]);
  }
  for (int r = 1; r < n; ++r) {
    if (declines[r].empty() != declines[0].empty()) throw std::runtime_error("ranks disagree on declining");
  }
  out.declined = declines[0];
  for (auto& l : logs) out.sent.insert(out.sent.end(), l.begin(), l.end());
  out.copies = cma;
  return out;
}

std::string pair_name(int s, int d) { return std::to_string(s) + "->" + std::to_string(d); }

// Per (src, dst): the real messages in order must be the schedule's steps
// on that pair in order, each step `messages` consecutive messages of
// `bytes` in all. Returns what differs ("" when nothing).
std::string compare_transfers(const Observed& run, const std::vector<schedule::Transfer>& plan, int per_host) {
  std::map<std::pair<int, int>, std::vector<size_t>> real;
  std::ostringstream why;
  for (const Sent& s : run.sent) {
    real[{s.src, s.dst}].push_back(s.bytes);
    if (s.network != (s.src / per_host != s.dst / per_host)) {
      why << pair_name(s.src, s.dst) << " went over the " << (s.network ? "network" : "node") << " transport; ";
    }
  }
  std::map<std::pair<int, int>, std::vector<const schedule::Transfer*>> planned;
  for (const auto& t : plan) planned[{t.src, t.dst}].push_back(&t);
  std::set<std::pair<int, int>> pairs;
  for (const auto& [k, v] : real) pairs.insert(k);
  for (const auto& [k, v] : planned) pairs.insert(k);
  for (const auto& pr : pairs) {
    const auto& msgs = real[pr];
    const auto& steps = planned[pr];
    uint64_t real_bytes = 0, plan_bytes = 0, plan_msgs = 0;
    for (size_t b : msgs) real_bytes += b;
    for (const auto* t : steps) {
      plan_bytes += t->bytes;
      plan_msgs += t->messages;
    }
    if (real_bytes != plan_bytes || msgs.size() != plan_msgs) {
      why << pair_name(pr.first, pr.second) << ": sent " << msgs.size() << " messages, " << real_bytes
          << " bytes; the schedule says " << plan_msgs << ", " << plan_bytes << "; ";
      continue;
    }
    size_t next = 0;
    for (const auto* t : steps) {
      uint64_t b = 0;
      for (uint64_t m = 0; m < t->messages; ++m) b += msgs[next++];
      if (b != t->bytes) {
        why << pair_name(pr.first, pr.second) << " step " << t->step << ": sent " << b << " bytes, the schedule says "
            << t->bytes << "; ";
        break;
      }
    }
  }
  return why.str();
}

// The shared-memory side: synchronisations per rank against the steps
// without transfers, and single copies against those steps' figures.
std::string compare_shm(const Observed& run, const schedule::Schedule& s, const std::vector<schedule::Transfer>& plan) {
  std::set<size_t> with_transfers;
  for (const auto& t : plan) with_transfers.insert(t.step);
  uint64_t shm_steps = 0, plan_copies = 0, plan_copy_bytes = 0;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    if (with_transfers.count(i)) continue;
    ++shm_steps;
    plan_copies += s.steps[i].messages;
    plan_copy_bytes += s.steps[i].bytes;
  }
  std::ostringstream why;
  const uint64_t announced = *std::max_element(run.announcements.begin(), run.announcements.end());
  if (announced != shm_steps) {
    why << "the busiest rank announced " << announced << " shm steps, the schedule has " << shm_steps << "; ";
  }
  const std::string& name = s.algorithm;
  if (name == "cma") {
    uint64_t most = 0, most_bytes = 0;
    for (const auto& [r, c] : run.copies) {
      most = std::max(most, c.count);
      most_bytes = std::max(most_bytes, c.bytes);
    }
    if (most != plan_copies || most_bytes != plan_copy_bytes) {
      why << "the busiest rank made " << most << " single copies of " << most_bytes << " bytes, the schedule says "
          << plan_copies << " of " << plan_copy_bytes << "; ";
    }
  } else if (!run.copies.empty()) {
    why << "single copies outside a cma algorithm; ";
  }
  return why.str();
}

const Layout kPlacements[] = {{1, 2}, {1, 3}, {2, 1}, {3, 1}, {2, 2}, {2, 3}, {4, 1}};
// Elements per call: fewer than some groups have ranks (empty blocks), and
// enough for several shm chunks of kSlotBytes and uneven blocks everywhere;
// the largest is several of the broadcast chain's chunks (at least 16 KiB).
const size_t kCounts[] = {0, 1, 7, 3001, 40003};

TEST(ScheduleTransfers, EveryAlgorithmSendsWhatItsScheduleSays) {
  setenv("SMDDP_SHM_SLOT_BYTES", std::to_string(kSlotBytes).c_str(), 1);
  setenv("SMDDP_SHM_CELL_BYTES", "4096", 1);
  schedule::Options opts;
  opts.shm_slot_bytes = kSlotBytes;
  std::map<std::string, int> compared;  // runs an algorithm was checked on (accepted)
  for (const Algorithm& alg : algorithm_registry()) {
    const std::string id = std::string(to_string(alg.info.collective)) + "/" + std::string(alg.info.name);
    if (!alg.info.host_memory) {
      // Device rows stage chunks through host memory and run a host
      // algorithm on them; schedules are of host algorithms only.
      EXPECT_THROW(schedule::make(alg.info.collective, alg.info.name, {1, 2}, 1024, kEs, opts), UsageError) << id;
      continue;
    }
    compared[id] = 0;
    for (const Layout p : kPlacements) {
      for (const size_t count : kCounts) {
        const int n = p.hosts * p.per_host;
        const Row sh = row_of(alg.info.collective, count, n);
        SCOPED_TRACE(id + " on " + std::to_string(p.hosts) + "x" + std::to_string(p.per_host) + ", count " +
                     std::to_string(count));
        std::vector<schedule::Transfer> plan;
        const schedule::Schedule s = schedule::make(alg.info.collective, alg.info.name, {p.hosts, p.per_host},
                                                    sh.row_bytes, kEs, opts, &plan);
        Observed run;
        try {
          run = run_threads(alg, p, sh.count);
        } catch (const std::exception& e) {
          ADD_FAILURE() << e.what();
          continue;
        }
        ASSERT_EQ(run.declined.empty(), s.declined.empty()) << "engine: '" << run.declined << "', schedule: '"
                                                            << s.declined << "'";
        if (!s.declined.empty()) {
          EXPECT_NE(run.declined.find(s.declined), std::string::npos) << run.declined << " / " << s.declined;
          continue;
        }
        ++compared[id];
        EXPECT_EQ(compare_transfers(run, plan, p.per_host), "");
        EXPECT_EQ(compare_shm(run, s, plan), "");
      }
    }
  }
  // A registered host algorithm that never ran here is not checked: add a
  // placement (or a call) it accepts.
  for (const auto& [id, runs] : compared) EXPECT_GT(runs, 0) << id << " ran on no placement of this test";
  EXPECT_FALSE(compared.empty());
}

// The comparison itself can fail: a schedule with one byte more on a pair.
TEST(ScheduleTransfers, ComparisonSeesADifference) {
  Observed run;
  run.sent = {{0, 1, 8, true}, {1, 0, 8, true}};
  std::vector<schedule::Transfer> plan = {{0, 0, 1, 8, 1}, {0, 1, 0, 8, 1}};
  EXPECT_EQ(compare_transfers(run, plan, 1), "");
  plan[1].bytes = 9;
  EXPECT_NE(compare_transfers(run, plan, 1), "");
  plan[1].bytes = 8;
  plan[1].messages = 2;
  EXPECT_NE(compare_transfers(run, plan, 1), "");
  run.sent[0].network = false;  // a cross-host message through the node's transport
  plan[1].messages = 1;
  EXPECT_NE(compare_transfers(run, plan, 1), "");
}

}  // namespace
