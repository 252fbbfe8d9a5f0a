// Builds the Topology (hosts, pids, nodes) from any bootstrap.
#include <unistd.h>

#include <algorithm>

#include "smddp/error.h"
#include "bootstrap/bootstrap.h"

namespace smddp {

Topology discover_topology(Bootstrap& bootstrap, int ranks_per_node) {
  struct Entry {
    char host[64];
    int pid;
    int key;
  };
  Entry mine{};
  gethostname(mine.host, sizeof(mine.host) - 1);
  mine.pid = static_cast<int>(getpid());
  mine.key = bootstrap.shared_memory_key();

  Topology t;
  t.rank = bootstrap.rank();
  t.size = bootstrap.size();
  std::vector<Entry> all(t.size);
  bootstrap.allgather(&mine, all.data(), sizeof(Entry));

  // Node ids in order of first appearance; virtual nodes split real ones.
  std::vector<int> keys;
  t.node_of.resize(t.size);
  for (int r = 0; r < t.size; ++r) {
    t.hosts.emplace_back(all[r].host);
    t.pids.push_back(all[r].pid);
    int key = all[r].key;
    if (ranks_per_node > 0) {
      // Consecutive groups of K world ranks: rank r is in virtual node r / K.
      t.node_of[r] = r / ranks_per_node;
      continue;
    }
    size_t k = 0;
    while (k < keys.size() && keys[k] != key) ++k;
    if (k == keys.size()) keys.push_back(key);
    t.node_of[r] = static_cast<int>(k);
  }
  if (ranks_per_node > 0) {
    // A virtual node must not span real nodes: shared memory would not work.
    for (int r = 0; r < t.size; ++r) {
      int first = (r / ranks_per_node) * ranks_per_node;
      if (all[r].key != all[first].key) {
        throw UsageError("SMDDP_RANKS_PER_NODE=" + std::to_string(ranks_per_node) +
                         " puts ranks of different hosts in one node (rank " + std::to_string(r) +
                         " on " + all[r].host + ")");
      }
    }
  }
  t.num_nodes = 0;
  for (int n : t.node_of) t.num_nodes = std::max(t.num_nodes, n + 1);
  t.node_ranks.assign(t.num_nodes, {});
  for (int r = 0; r < t.size; ++r) t.node_ranks[t.node_of[r]].push_back(r);
  t.node = t.node_of[t.rank];
  const auto& mine_node = t.node_ranks[t.node];
  t.local_size = static_cast<int>(mine_node.size());
  for (int i = 0; i < t.local_size; ++i) {
    if (mine_node[i] == t.rank) t.local_rank = i;
  }
  return t;
}

// Only the MPI bootstrap splits (MPI_Comm_split); the TCP store would need
// a store per group, which nothing has asked for yet.
std::unique_ptr<Bootstrap> Bootstrap::split(int, int) {
  throw UsageError("splitting the ranks into groups needs the MPI bootstrap (mpirun or srun); this job was started "
                   "torchrun-style (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)");
}

}  // namespace smddp
