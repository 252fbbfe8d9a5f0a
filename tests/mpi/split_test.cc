// Communicator::split: the ranks of each colour become a communicator of
// their own, renumbered by key, with their own hosts and nodes, and the
// groups run collectives at the same time, each on its own.
//
//   mpi_split_test --mod N | --div N   colour = world rank % N (or / N)
//
// Checked on every rank against MPI itself (never the engine under test):
// the group's size and this rank's number in it, its hosts and node count,
// and a round of allreduce, allgather, alltoall, broadcast from the group's
// last rank and reduce-scatter whose values depend on world ranks, so that
// a group that saw another group's data shows up. Then a split by a
// reversed key renumbers backwards, and a negative colour is refused. Every
// rank exits 1 on its own failures; rank 0 prints the total from
// MPI_Allreduce.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "smddp/communicator.h"
#include "smddp/error.h"

using namespace smddp;

namespace {

int failures = 0;

void expect(bool ok, const char* what, long long got, long long want) {
  if (ok) return;
  ++failures;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "rank %d: %s: got %lld, expected %lld\n", rank, what, got, want);
}

// Element k of world rank w's input.
int64_t input(int w, size_t k) { return 1000 * static_cast<int64_t>(w) + static_cast<int64_t>(k) + 1; }

// The collectives on one group, whose world ranks are `members` (group order).
void check_collectives(Communicator& g, const std::vector<int>& members, int world_rank) {
  const int n = g.size();
  const int me = g.rank();
  constexpr size_t kCount = 1001;  // odd: blocks do not divide evenly anywhere
  std::vector<int64_t> send(kCount * n), recv(kCount * n);

  for (size_t k = 0; k < kCount; ++k) send[k] = input(world_rank, k);
  g.allreduce(send.data(), recv.data(), kCount, DataType::Int64, ReduceOp::Sum);
  for (size_t k = 0; k < kCount; ++k) {
    int64_t want = 0;
    for (int w : members) want += input(w, k);
    expect(recv[k] == want, "allreduce", recv[k], want);
  }

  g.allgather(send.data(), recv.data(), kCount, DataType::Int64);
  for (int r = 0; r < n; ++r) {
    for (size_t k = 0; k < kCount; ++k) {
      expect(recv[r * kCount + k] == input(members[r], k), "allgather", recv[r * kCount + k], input(members[r], k));
    }
  }

  // Block p of the send buffer goes to group rank p: value names sender and receiver.
  for (int p = 0; p < n; ++p) {
    for (size_t k = 0; k < kCount; ++k) send[p * kCount + k] = input(world_rank, k) * 100 + p;
  }
  g.alltoall(send.data(), recv.data(), kCount, DataType::Int64);
  for (int r = 0; r < n; ++r) {
    for (size_t k = 0; k < kCount; ++k) {
      const int64_t want = input(members[r], k) * 100 + me;
      expect(recv[r * kCount + k] == want, "alltoall", recv[r * kCount + k], want);
    }
  }

  const int root = n - 1;
  for (size_t k = 0; k < kCount; ++k) send[k] = input(world_rank, k);
  g.broadcast(send.data(), recv.data(), kCount, DataType::Int64, root);
  for (size_t k = 0; k < kCount; ++k) expect(recv[k] == input(members[root], k), "broadcast", recv[k], input(members[root], k));

  for (size_t i = 0; i < kCount * n; ++i) send[i] = input(world_rank, i);
  g.reduce_scatter(send.data(), recv.data(), kCount, DataType::Int64, ReduceOp::Sum);
  for (size_t k = 0; k < kCount; ++k) {
    int64_t want = 0;
    for (int w : members) want += input(w, me * kCount + k);
    expect(recv[k] == want, "reduce_scatter", recv[k], want);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "--mod") != 0 && std::strcmp(argv[1], "--div") != 0)) {
    std::fprintf(stderr, "usage: mpi_split_test --mod N | --div N\n");
    return 2;
  }
  const bool mod = std::strcmp(argv[1], "--mod") == 0;
  const int by = std::atoi(argv[2]);
  {
    auto world = Communicator::create();
    const int w = world->rank();
    const int size = world->size();
    const int color = mod ? w % by : w / by;
    std::vector<int> members;  // world ranks of this colour, ascending
    for (int r = 0; r < size; ++r) {
      if ((mod ? r % by : r / by) == color) members.push_back(r);
    }
    int index = 0;
    while (members[index] != w) ++index;

    auto group = world->split(color, w);
    expect(group->size() == static_cast<int>(members.size()), "group size", group->size(), members.size());
    expect(group->rank() == index, "group rank", group->rank(), index);
    // Hosts by group rank are the world's hosts of its members; nodes count
    // only the group's (with SMDDP_RANKS_PER_NODE, virtual nodes of its own).
    for (int r = 0; r < group->size(); ++r) {
      expect(group->host(r) == world->host(members[r]), "host of group rank", r, members[r]);
    }
    std::vector<std::string> hosts;
    for (int m : members) {
      if (std::find(hosts.begin(), hosts.end(), world->host(m)) == hosts.end()) hosts.push_back(world->host(m));
    }
    const char* per_node = std::getenv("SMDDP_RANKS_PER_NODE");
    const int want_nodes = per_node ? static_cast<int>((members.size() + std::atoi(per_node) - 1) / std::atoi(per_node))
                                    : static_cast<int>(hosts.size());
    expect(group->num_nodes() == want_nodes, "group nodes", group->num_nodes(), want_nodes);
    expect(group->timeout() == world->timeout(), "group timeout", static_cast<long long>(group->timeout()),
           static_cast<long long>(world->timeout()));

    check_collectives(*group, members, w);
    // The world still works while the groups exist.
    int64_t one = 1, all = 0;
    world->allreduce(&one, &all, 1, DataType::Int64, ReduceOp::Sum);
    expect(all == size, "world allreduce after the split", all, size);

    // A reversed key numbers the group backwards.
    auto backwards = world->split(color, size - w);
    const int reversed = static_cast<int>(members.size()) - 1 - index;
    expect(backwards->rank() == reversed, "rank under a reversed key", backwards->rank(), reversed);
    std::vector<int> reversed_members(members.rbegin(), members.rend());
    check_collectives(*backwards, reversed_members, w);

    bool refused = false;
    try {
      world->split(-1, w);
    } catch (const UsageError&) {
      refused = true;
    }
    expect(refused, "negative colour refused", refused, 1);
    world->barrier();
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::printf("split: %d failures\n", total);
  MPI_Finalize();
  return failures ? 1 : 0;
}
