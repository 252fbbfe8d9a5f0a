// Every collective x algorithm x dtype x op x count x placement against the
// reference, on whatever rank count mpirun (or a torchrun-style launcher:
// RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) gives. Algorithms that decline
// the topology (e.g. shm_direct across virtual nodes) are listed as
// declined; at least one algorithm of each collective must run. Exit 0 only
// when every element of every call matched. The bookkeeping (seed, failure
// counts) goes through the Communicator, so no MPI is needed; each rank
// also exits 1 on its own wrong elements, so a broken allreduce cannot hide
// failures.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "reference.h"
#include "smddp/algorithms.h"
#include "smddp/communicator.h"
#include "smddp/error.h"

using namespace smddp;

namespace {

struct Options {
  std::vector<size_t> counts{0, 1, 7, 1000003};
  uint64_t seed = 0;
  std::set<std::string> only;  // --collectives a,b: run just these
};

Options parse(int argc, char** argv) {
  Options o;
  o.seed = 0x5eed0000ULL + static_cast<uint64_t>(std::time(nullptr) % 100000);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--counts" && i + 1 < argc) {
      o.counts.clear();
      std::stringstream ss(argv[++i]);
      std::string c;
      while (std::getline(ss, c, ',')) o.counts.push_back(std::stoull(c));
    } else if (a == "--collectives" && i + 1 < argc) {
      std::stringstream ss(argv[++i]);
      std::string c;
      while (std::getline(ss, c, ',')) o.only.insert(c);
    } else if (a == "--seed" && i + 1 < argc) {
      o.seed = std::stoull(argv[++i]);
    }
  }
  return o;
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
  Runner(Communicator& comm, uint64_t seed) : comm_(comm), seed_(seed) {}

  // Returns the number of wrong elements on this rank; throws UsageError on decline.
  size_t run(const Case& c) {
    const int n = comm_.size(), me = comm_.rank();
    const size_t es = dtype_size(c.dtype);
    BufferCounts bc = buffer_counts(c.coll, c.count, n);
    std::vector<char> send(bc.send * es + 1), recv(bc.recv * es + 1);
    // Inputs: each rank's vector, laid out as the collective reads it.
    size_t in_first = 0;  // element index of send[0] in this rank's input stream
    void* sendp = send.data();
    void* recvp = recv.data();
    switch (c.coll) {
      case Collective::AllGather:
        if (c.in_place) sendp = recv.data() + me * c.count * es;
        break;
      case Collective::ReduceScatter:
        if (c.in_place) recvp = send.data() + me * c.count * es;
        break;
      default:
        if (c.in_place) sendp = recv.data();
    }
    if (c.in_place && c.coll == Collective::AllGather) {
      fill_input_to(sendp, me, in_first, c.count, c);
    } else if (c.in_place && c.coll != Collective::ReduceScatter) {
      fill_input_to(recv.data(), me, in_first, bc.send, c);
    } else {
      fill_input_to(send.data(), me, in_first, bc.send, c);
    }
    // Poison the output so untouched elements are caught.
    if (!c.in_place) std::memset(recv.data(), 0xA5, recv.size());
    CollectiveArgs args{c.coll, sendp, recvp, c.count, c.dtype, c.op, c.root};
    comm_.run(args, CallOptions{c.algorithm});
    // An output identical to one already verified for the same call needs
    // no element-wise check: algorithms that round alike skip the reference.
    const size_t out_bytes = (c.coll == Collective::Reduce && me != c.root) ? 0 : bc.recv * es;
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
      return test::matches_reduction(out, i, c.dtype, c.op, n, expected(c, index));
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
      cache_.resize(index + 1);
      filled_.resize(index + 1, false);
    }
    if (!filled_[index]) {
      cache_[index] = test::reduce_reference(seed_, comm_.size(), index, c.dtype, c.op);
      filled_[index] = true;
    }
    return cache_[index];
  }

  Communicator& comm_;
  uint64_t seed_;
  DataType cached_dtype_ = DataType::Uint8;
  ReduceOp cached_op_ = ReduceOp::Sum;
  std::vector<test::Expected> cache_;
  std::vector<bool> filled_;
  std::map<std::string, std::vector<char>> inputs_;
  std::map<std::string, std::vector<char>> verified_;
};

}  // namespace

int main(int argc, char** argv) {
  Options opt = parse(argc, argv);
  int failures = 0;
  size_t wrong_here = 0;
  {
    auto comm = Communicator::create();  // initialises MPI when mpirun started us
    comm->broadcast(&opt.seed, &opt.seed, 1, DataType::Uint64, 0);
    const int n = comm->size();
    Runner runner(*comm, opt.seed);
    size_t cases = 0;
    std::set<std::string> ran, declined;
    // Algorithms innermost, so the reference of one (dtype, op, count) is
    // computed once and shared by every algorithm and placement.
    for (Collective coll : all_collectives()) {
      if (!opt.only.empty() && !opt.only.count(std::string(to_string(coll)))) continue;
      const bool reduces = collective_reduces(coll);
      std::vector<DataType> dtypes(all_dtypes().begin(), all_dtypes().end());
      std::vector<ReduceOp> ops = reduces ? std::vector<ReduceOp>(all_ops().begin(), all_ops().end())
                                          : std::vector<ReduceOp>{ReduceOp::Sum};
      if (coll == Collective::Barrier) dtypes = {DataType::Uint8};
      std::vector<int> roots = collective_has_root(coll) ? std::vector<int>{0, n - 1} : std::vector<int>{0};
      for (size_t count : coll == Collective::Barrier ? std::vector<size_t>{0} : opt.counts) {
        for (DataType dt : dtypes) {
          for (ReduceOp op : ops) {
            for (const AlgorithmInfo& algo : list_algorithms()) {
              const std::string key = std::string(to_string(coll)) + "/" + std::string(algo.name);
              if (algo.collective != coll || declined.count(key)) continue;
              for (bool in_place : {false, true}) {
                for (int root : roots) {
                  Case c{coll, std::string(algo.name), dt, op, count, in_place, root};
                  size_t wrong = 0;
                  try {
                    wrong = runner.run(c);
                  } catch (const UsageError& e) {
                    // The same on every rank: it depends on the topology only.
                    if (declined.insert(key).second && comm->rank() == 0) {
                      std::printf("declined: %s: %s\n", key.c_str(), e.what());
                    }
                    break;
                  } catch (const Error& e) {
                    // A timeout or lost peer: name the case, the seed reproduces it.
                    std::fprintf(stderr, "rank %d: %s: %s\n", comm->rank(), describe(c, opt.seed).c_str(), e.what());
                    std::exit(1);
                  }
                  ++cases;
                  ran.insert(std::string(to_string(coll)));
                  wrong_here += wrong;
                  uint64_t total = wrong;
                  comm->allreduce(&total, &total, 1, DataType::Uint64, ReduceOp::Sum);
                  if (total) {
                    ++failures;
                    if (comm->rank() == 0) {
                      std::printf("FAIL: %s: %llu wrong elements\n", describe(c, opt.seed).c_str(),
                                  static_cast<unsigned long long>(total));
                    }
                  }
                }
                if (declined.count(key)) break;
              }
            }
          }
        }
      }
    }
    for (Collective c : all_collectives()) {
      if (!opt.only.empty() && !opt.only.count(std::string(to_string(c)))) continue;
      if (!ran.count(std::string(to_string(c)))) {
        ++failures;
        if (comm->rank() == 0) std::printf("FAIL: no algorithm ran %s\n", std::string(to_string(c)).c_str());
      }
    }
    if (comm->rank() == 0) {
      std::printf("%d ranks (%d nodes): %zu cases, %zu algorithms declined, %d failed, seed %llu\n", n,
                  comm->num_nodes(), cases, declined.size(), failures,
                  static_cast<unsigned long long>(opt.seed));
    }
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Finalize();
  return failures || wrong_here ? 1 : 0;
}
