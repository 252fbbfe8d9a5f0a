// Every collective x algorithm x dtype x op x count x placement against the
// reference, on whatever rank count mpirun (or a torchrun-style launcher:
// RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) gives. Every host-memory
// algorithm must run, except those the topology's test names with
// --expect-declined (e.g. shm_direct across virtual nodes): an unexpected
// decline, or an expected one that ran, is a failure, and every decline is
// printed with its reason. Barriers are checked with tokens in a shared
// file (barrier_probe.h). The verdict never goes through the engine under
// test: each rank exits 1 on its own failures, and the summary's totals
// come from MPI_Allreduce when MPI is up (under the TCP store each rank
// reports its own).
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "barrier_probe.h"
#include "reference.h"
#include "smddp/algorithms.h"
#include "smddp/common/strings.h"
#include "smddp/communicator.h"
#include "smddp/error.h"
#include "smddp/traits.h"

using namespace smddp;

namespace {

constexpr int kBarrierRounds = 40;

struct Options {
  std::vector<size_t> counts{0, 1, 7, 1000003};
  uint64_t seed = 0;
  std::set<std::string> only;               // --collectives a,b: run just these
  std::set<std::string> dtypes;             // --dtypes double,int64: just these (default all, fp8 too)
  std::set<std::string> ops;                // --ops sum,max: just these (default all)
  // --largest-count-ops sum,avg: at the largest count, just these. An
  // operator's arithmetic is the same at every count; the largest count is
  // there for chunking and pipelining, which every operator walks alike.
  std::set<std::string> largest_count_ops;
  // --largest-count-dtypes int8,bfloat16,float32,float64: at the largest
  // count, just these. Chunks and pipelines cut bytes, so one dtype of each
  // element size walks every boundary; each dtype's arithmetic (vector
  // bodies and tails) is checked at every smaller count.
  std::set<std::string> largest_count_dtypes;
  std::set<std::string> expect_declined;    // --expect-declined coll/algo,...
};

// A comma list as a set (common::split: trimmed, empty items dropped).
std::set<std::string> split(const std::string& list) {
  const std::vector<std::string> items = common::split(list, ',');
  return {items.begin(), items.end()};
}

// The seed: --seed, else SMDDP_TEST_SEED, else rank 0's clock (printed, so
// a failure replays with --seed).
Options parse(int argc, char** argv) {
  Options o;
  const char* env_seed = std::getenv("SMDDP_TEST_SEED");
  o.seed = env_seed && *env_seed ? std::stoull(env_seed)
                                 : 0x5eed0000ULL + static_cast<uint64_t>(std::time(nullptr) % 100000);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--counts" && i + 1 < argc) {
      o.counts.clear();
      for (const std::string& c : split(argv[++i])) o.counts.push_back(std::stoull(c));
      std::sort(o.counts.begin(), o.counts.end());
    } else if (a == "--collectives" && i + 1 < argc) {
      o.only = split(argv[++i]);
    } else if ((a == "--dtypes" || a == "--largest-count-dtypes") && i + 1 < argc) {
      // Any name -d takes (f8e4m3, float, float32, ...), kept as the canonical one.
      for (const std::string& name : split(argv[++i])) {
        const auto dt = parse_dtype(name);
        if (!dt) {
          std::fprintf(stderr, "mpi_collectives_test: unknown dtype '%s'\n", name.c_str());
          std::exit(64);
        }
        (a == "--dtypes" ? o.dtypes : o.largest_count_dtypes).insert(std::string(to_string(*dt)));
      }
    } else if (a == "--ops" && i + 1 < argc) {
      o.ops = split(argv[++i]);
    } else if (a == "--largest-count-ops" && i + 1 < argc) {
      o.largest_count_ops = split(argv[++i]);
    } else if (a == "--expect-declined" && i + 1 < argc) {
      o.expect_declined = split(argv[++i]);
    } else if (a == "--seed" && i + 1 < argc) {
      o.seed = std::stoull(argv[++i]);
    } else {
      std::fprintf(stderr, "mpi_collectives_test: unknown argument '%s'\n", a.c_str());
      std::exit(64);
    }
  }
  return o;
}

bool algorithm_exists_key(const std::string& key) {
  for (const AlgorithmInfo& a : list_algorithms()) {
    if (key == std::string(to_string(a.collective)) + "/" + std::string(a.name)) return true;
  }
  return false;
}

bool mpi_up() {
  int up = 0;
  MPI_Initialized(&up);
  return up != 0;
}

// Sums a count over the ranks with MPI itself when it is up, never with the
// engine under test; without MPI (TCP store) each rank has only its own.
uint64_t total_over_ranks(uint64_t mine) {
  if (!mpi_up()) return mine;
  uint64_t total = 0;
  MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

// alltoallv: elements rank `from` sends rank `to` for a call of `count`:
// skewed, from 0 up to 2*count, so empty and uneven parts both occur.
size_t peer_count(int from, int to, size_t count, int n) {
  return count * static_cast<size_t>((3 * from + to) % (n + 1)) * 2 / static_cast<size_t>(n);
}

struct Case {
  Collective coll;
  std::string algorithm;
  DataType dtype;
  ReduceOp op;
  size_t count;
  bool in_place;
  int root;
};

std::string describe(const Case& c, uint64_t seed) {
  std::ostringstream s;
  s << to_string(c.coll) << "/" << c.algorithm << " " << to_string(c.dtype) << " " << to_string(c.op)
    << " count=" << c.count << (c.in_place ? " in-place" : " out-of-place") << " root=" << c.root
    << " seed=" << seed;
  return s.str();
}

class Runner {
 public:
  Runner(Communicator& comm, uint64_t seed, test::BarrierProbe& probe)
      : comm_(comm), seed_(seed), probe_(probe), delays_(seed ^ (0x100000001b3ULL * (comm.rank() + 1))) {}

  // Returns the number of wrong elements on this rank (for a barrier: the
  // ranks found missing after it); throws UsageError on decline.
  size_t run(const Case& c) {
    if (c.coll == Collective::Barrier) return run_barrier(c);
    const int n = comm_.size(), me = comm_.rank();
    const size_t es = dtype_size(c.dtype);
    // The layout comes from the collective's row (smddp/traits.h).
    const CollectiveTraits& t = traits(c.coll);
    std::vector<size_t> send_counts, recv_counts;
    if (t.per_peer()) {
      for (int p = 0; p < n; ++p) {
        send_counts.push_back(peer_count(me, p, c.count, n));
        recv_counts.push_back(peer_count(p, me, c.count, n));
      }
    }
    BufferCounts bc = buffer_counts(c.coll, c.count, n, send_counts.data(), recv_counts.data());
    // In place on one buffer, it holds the larger of the two (alltoallv).
    const size_t recv_elements = t.in_place == InPlace::Same ? std::max(bc.send, bc.recv) : bc.recv;
    std::vector<char> send(bc.send * es + 1), recv(recv_elements * es + 1);
    // Inputs: each rank's vector, laid out as the collective reads it.
    size_t in_first = 0;  // element index of send[0] in this rank's input stream
    void* sendp = send.data();
    void* recvp = recv.data();
    if (c.in_place && t.in_place == InPlace::SendInRecv) {
      sendp = recv.data() + me * c.count * es;
      fill_input_to(sendp, me, in_first, c.count, c);
    } else if (c.in_place && t.in_place == InPlace::RecvInSend) {
      recvp = send.data() + me * c.count * es;
      fill_input_to(send.data(), me, in_first, bc.send, c);
    } else if (c.in_place) {
      sendp = recv.data();
      fill_input_to(recv.data(), me, in_first, bc.send, c);
    } else {
      fill_input_to(send.data(), me, in_first, bc.send, c);
    }
    // Poison the output so untouched elements are caught.
    if (!c.in_place) std::memset(recv.data(), 0xA5, recv.size());
    CollectiveArgs args{c.coll, sendp, recvp, c.count, c.dtype, c.op, c.root};
    if (t.per_peer()) {
      args.send_counts = send_counts.data();
      args.recv_counts = recv_counts.data();
    }
    comm_.run(args, CallOptions{c.algorithm});
    // An output identical to one already verified for the same call needs
    // no element-wise check: algorithms that round alike skip the reference.
    const size_t out_bytes = t.receives_on(me, t.has_root ? c.root : -1) ? bc.recv * es : 0;
    const std::string key = std::string(to_string(c.coll)) + "/" + std::to_string(c.count) + "/" +
                            std::to_string(c.root);
    auto known = verified_.find(key);
    if (known != verified_.end() && known->second.size() == out_bytes &&
        (out_bytes == 0 || std::memcmp(known->second.data(), recvp, out_bytes) == 0)) {
      return 0;
    }
    size_t wrong = check(c, recvp);
    if (wrong == 0) verified_[key].assign(static_cast<char*>(recvp), static_cast<char*>(recvp) + out_bytes);
    return wrong;
  }

 private:
  // kBarrierRounds barriers, each entered after a random delay of up to
  // 2 ms; after each, every rank must have announced its arrival.
  size_t run_barrier(const Case& c) {
    size_t missing = 0;
    CollectiveArgs args{Collective::Barrier, nullptr, nullptr, 0, c.dtype, c.op, 0};
    for (int i = 0; i < kBarrierRounds; ++i) {
      const uint64_t round = ++barrier_round_;
      usleep(static_cast<useconds_t>(delays_() % 2000));
      probe_.arrive(round);
      comm_.run(args, CallOptions{c.algorithm});
      missing += probe_.missing(round);
    }
    return missing;
  }

  // Inputs are generated once per (dtype, op, count) and copied after.
  void fill_input_to(void* p, int rank, size_t first, size_t count, const Case& c) {
    reset_caches(c);
    auto& input = inputs_[std::to_string(rank) + "/" + std::to_string(first) + "/" + std::to_string(count)];
    if (input.empty() && count) {
      input.resize(count * dtype_size(c.dtype));
      test::fill_input(input.data(), seed_, rank, first, count, c.dtype, c.op);
    }
    if (count) std::memcpy(p, input.data(), input.size());
  }

  void reset_caches(const Case& c) {
    if (c.dtype == cached_dtype_ && c.op == cached_op_) return;
    cache_.clear();
    filled_.clear();
    inputs_.clear();
    verified_.clear();
    cached_dtype_ = c.dtype;
    cached_op_ = c.op;
  }

  size_t check(const Case& c, const void* out) {
    const int n = comm_.size(), me = comm_.rank();
    size_t wrong = 0;
    auto input_ok = [&](size_t i, int rank, size_t index) {
      return test::matches_input(out, i, c.dtype, seed_, rank, index, c.op);
    };
    auto reduced_ok = [&](size_t i, size_t index) {
      return test::matches_reduction(out, i, c.dtype, expected(c, index));
    };
    switch (c.coll) {
      case Collective::AllReduce:
        for (size_t i = 0; i < c.count; ++i) wrong += !reduced_ok(i, i);
        break;
      case Collective::Reduce:
        if (me == c.root) {
          for (size_t i = 0; i < c.count; ++i) wrong += !reduced_ok(i, i);
        }
        break;
      case Collective::ReduceScatter:
        for (size_t i = 0; i < c.count; ++i) wrong += !reduced_ok(i, me * c.count + i);
        break;
      case Collective::AllGather:
        for (int r = 0; r < n; ++r) {
          for (size_t i = 0; i < c.count; ++i) wrong += !input_ok(r * c.count + i, r, i);
        }
        break;
      case Collective::Broadcast:
        for (size_t i = 0; i < c.count; ++i) wrong += !input_ok(i, c.root, i);
        break;
      case Collective::AllToAll:
        for (int r = 0; r < n; ++r) {
          for (size_t i = 0; i < c.count; ++i) wrong += !input_ok(r * c.count + i, r, me * c.count + i);
        }
        break;
      case Collective::Gather:
        if (me == c.root) {
          for (int r = 0; r < n; ++r) {
            for (size_t i = 0; i < c.count; ++i) wrong += !input_ok(r * c.count + i, r, i);
          }
        }
        break;
      case Collective::Scatter:
        for (size_t i = 0; i < c.count; ++i) wrong += !input_ok(i, c.root, me * c.count + i);
        break;
      case Collective::SendRecv:
        for (size_t i = 0; i < c.count; ++i) wrong += !input_ok(i, (me + n - 1) % n, i);
        break;
      case Collective::AllToAllV: {
        // Part r: rank r's elements for me, after its parts for ranks < me.
        size_t out_at = 0;
        for (int r = 0; r < n; ++r) {
          size_t first = 0;
          for (int p = 0; p < me; ++p) first += peer_count(r, p, c.count, n);
          const size_t len = peer_count(r, me, c.count, n);
          for (size_t i = 0; i < len; ++i) wrong += !input_ok(out_at + i, r, first + i);
          out_at += len;
        }
        break;
      }
      case Collective::Barrier:
        break;
    }
    return wrong;
  }

  // The reference for one element, cached for the current (dtype, op):
  // every algorithm and placement of it checks against the same values.
  const test::Expected& expected(const Case& c, size_t index) {
    reset_caches(c);
    if (index >= cache_.size()) {
      cache_.resize(std::max(index + 1, 2 * cache_.size()));
      filled_.resize(cache_.size(), 0);
    }
    if (!filled_[index]) {
      cache_[index] = test::reduce_reference(seed_, comm_.size(), index, c.dtype, c.op);
      filled_[index] = true;
    }
    return cache_[index];
  }

  Communicator& comm_;
  uint64_t seed_;
  test::BarrierProbe& probe_;
  std::mt19937_64 delays_;
  uint64_t barrier_round_ = 0;
  DataType cached_dtype_ = DataType::Uint8;
  ReduceOp cached_op_ = ReduceOp::Sum;
  std::vector<test::Expected> cache_;
  std::vector<char> filled_;  // not vector<bool>: its resize costs more than the check
  std::map<std::string, std::vector<char>> inputs_;
  std::map<std::string, std::vector<char>> verified_;
};

}  // namespace

int main(int argc, char** argv) {
  Options opt = parse(argc, argv);
  uint64_t failures = 0;  // cases on this rank with a wrong element, and decline surprises
  {
    auto comm = Communicator::create();  // initialises MPI when mpirun started us
    const int n = comm->size(), me = comm->rank();
    // The seed travels through the engine; a broken broadcast shows as
    // wrong elements everywhere, not as a pass.
    comm->broadcast(&opt.seed, &opt.seed, 1, DataType::Uint64, 0);
    const std::string job = test::BarrierProbe::job_id();
    if (job.empty()) {
      std::fprintf(stderr, "mpi_collectives_test: no job id (PMIX_NAMESPACE or MASTER_ADDR/MASTER_PORT)\n");
      return 64;
    }
    test::BarrierProbe probe(job + "-" + std::to_string(opt.seed), opt.seed, me, n);
    Runner runner(*comm, opt.seed, probe);
    size_t cases = 0;
    std::set<std::string> ran, declined;
    auto wanted = [&](Collective c) { return opt.only.empty() || opt.only.count(std::string(to_string(c))); };
    // Collectives and algorithms innermost, so the reference of one (count,
    // dtype, op) is computed once and shared by every collective (allreduce's
    // and reduce's elements are the first of reduce-scatter's), algorithm and
    // placement. Collectives that move data run once per (count, dtype),
    // with the first operator's turn; the barrier once.
    std::vector<DataType> dtypes;
    for (DataType dt : all_dtypes()) {
      if (opt.dtypes.empty() || opt.dtypes.count(std::string(to_string(dt)))) dtypes.push_back(dt);
    }
    std::vector<ReduceOp> ops;
    for (ReduceOp op : all_ops()) {
      if (opt.ops.empty() || opt.ops.count(std::string(to_string(op)))) ops.push_back(op);
    }
    for (size_t count : opt.counts) {
      // At the largest count, only the operators and dtypes that
      // --largest-count-ops/--largest-count-dtypes keep (all when unset).
      auto left_out_at_largest = [&](const std::set<std::string>& keep, std::string_view name) {
        return count == opt.counts.back() && !keep.empty() && !keep.count(std::string(name));
      };
      for (DataType dt : dtypes) {
        for (ReduceOp op : ops) {
          for (Collective coll : all_collectives()) {
            if (!wanted(coll)) continue;
            const bool reduces = collective_reduces(coll);
            if (coll == Collective::Barrier && (count != opt.counts.front() || dt != dtypes.front() || op != ops.front())) {
              continue;
            }
            if (!reduces && op != ops.front()) continue;
            if (reduces && left_out_at_largest(opt.largest_count_ops, to_string(op))) continue;
            if (coll != Collective::Barrier && left_out_at_largest(opt.largest_count_dtypes, to_string(dt))) continue;
            const size_t c_count = coll == Collective::Barrier ? 0 : count;
            const DataType c_dtype = coll == Collective::Barrier ? DataType::Uint8 : dt;
            const ReduceOp c_op = reduces ? op : ReduceOp::Sum;
            std::vector<int> roots = collective_has_root(coll) ? std::vector<int>{0, n - 1} : std::vector<int>{0};
            for (const AlgorithmInfo& algo : list_algorithms()) {
              // Device-memory algorithms (cuda_staged) have their own tests.
              if (algo.collective != coll || !algo.host_memory) continue;
              const std::string key = std::string(to_string(coll)) + "/" + std::string(algo.name);
              if (declined.count(key)) continue;
              for (bool in_place : coll == Collective::Barrier ? std::vector<bool>{false} : std::vector<bool>{false, true}) {
                for (int root : roots) {
                  Case c{coll, std::string(algo.name), c_dtype, c_op, c_count, in_place, root};
                  size_t wrong = 0;
                  try {
                    wrong = runner.run(c);
                  } catch (const UsageError& e) {
                    // The same on every rank: it depends on the topology only.
                    declined.insert(key);
                    const bool expected = opt.expect_declined.count(key) > 0;
                    failures += !expected;
                    if (me == 0) {
                      std::printf("%s: %s: %s\n", expected ? "declined" : "FAIL: declined unexpectedly", key.c_str(),
                                  e.what());
                    }
                    break;
                  } catch (const Error& e) {
                    // A timeout or lost peer: name the case, the seed reproduces it.
                    std::fprintf(stderr, "rank %d: %s: %s\n", me, describe(c, opt.seed).c_str(), e.what());
                    std::exit(1);
                  }
                  ++cases;
                  ran.insert(key);
                  if (wrong) {
                    ++failures;
                    std::printf("FAIL: rank %d: %s: %zu wrong %s\n", me, describe(c, opt.seed).c_str(), wrong,
                                coll == Collective::Barrier ? "arrivals" : "elements");
                  }
                }
                if (declined.count(key)) break;
              }
            }
          }
        }
      }
    }
    for (const AlgorithmInfo& algo : list_algorithms()) {
      const std::string key = std::string(to_string(algo.collective)) + "/" + std::string(algo.name);
      if (!wanted(algo.collective) || !algo.host_memory || !opt.expect_declined.count(key) || declined.count(key)) {
        continue;
      }
      ++failures;
      if (me == 0) std::printf("FAIL: %s was expected to decline on this topology but ran\n", key.c_str());
    }
    for (const std::string& key : opt.expect_declined) {
      if (!algorithm_exists_key(key)) {
        ++failures;
        if (me == 0) std::printf("FAIL: --expect-declined names no algorithm '%s'\n", key.c_str());
      }
    }
    // Every rank leaves the probe's file only after the last barrier round.
    comm->barrier();
    if (me == 0) probe.remove();
    const uint64_t failed = total_over_ranks(failures);
    if (me == 0) {
      std::printf("%d ranks (%d nodes): %zu cases, %zu algorithms ran, %zu declined, %llu failed%s, seed %llu, "
                  "transport %s\n",
                  n, comm->num_nodes(), cases, ran.size(), declined.size(), static_cast<unsigned long long>(failed),
                  mpi_up() || n == 1 ? "" : " on this rank", static_cast<unsigned long long>(opt.seed),
                  std::string(comm->network_transport()).c_str());
    }
  }
  if (mpi_up()) MPI_Finalize();
  return failures ? 1 : 0;
}
