// The node's shared-memory segment (transports/shm_segment.h), its ranks as
// threads of this process, each with its own mapping.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "thread_ranks.h"
#include "transports/shm_segment.h"

using namespace smddp;
using namespace smddp::test;

namespace {

// This process's page table, from /proc/self/pagemap (opened once).
class PageTable {
 public:
  PageTable() : fd_(open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)) {}
  ~PageTable() {
    if (fd_ >= 0) close(fd_);
  }
  PageTable(const PageTable&) = delete;
  PageTable& operator=(const PageTable&) = delete;

  // Whether the page of `p` is mapped: the present bit (63) of its entry.
  // -1: pagemap cannot be read.
  int present(const void* p) const {
    static const long page = sysconf(_SC_PAGESIZE);
    uint64_t entry = 0;
    const off_t at = static_cast<off_t>(reinterpret_cast<uintptr_t>(p) / static_cast<uintptr_t>(page) * sizeof entry);
    if (fd_ < 0 || pread(fd_, &entry, sizeof entry, at) != static_cast<ssize_t>(sizeof entry)) return -1;
    return static_cast<int>(entry >> 63);
  }

 private:
  int fd_;
};

}  // namespace

// A channel reuses a cell only every 16 messages: left to their first
// touch, its pages fault on the first 16 messages of each larger size. Each
// rank maps its own channels, both ways, when the segment is set up, and
// not the other pairs' (O(n) of the n*n).
TEST(ShmSegment, EachRankMapsItsOwnChannelsAtSetup) {
  const PageTable table;
  const int probe = 0;
  if (table.present(&probe) < 0) GTEST_SKIP() << "/proc/self/pagemap cannot be read here";
  constexpr int n = 3;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  ThreadBootstrap::Shared shared(n);
  std::vector<std::string> failures(n);
  auto rank_main = [&](int rank) {
    ThreadBootstrap bootstrap(shared, rank);
    const Topology topo = topology({1, n}, rank);
    std::string& failed = failures[rank];
    std::unique_ptr<ShmSegment> seg;
    try {
      seg = ShmSegment::create_for_node(bootstrap, topo);
    } catch (const std::exception& e) {
      failed = e.what();
      shared.sync.arrive_and_drop();  // the others' barriers go on without this rank
      return;
    }
    if (!seg) {
      failed = "no segment";
    } else {
      const size_t stride = static_cast<size_t>(seg->cell(0, 1, 1) - seg->cell(0, 1, 0));
      const size_t span = seg->geometry().cells * stride;
      auto unmapped = [&](int from, int to) {
        size_t pages = 0;
        for (size_t off = 0; off < span; off += page) pages += table.present(seg->cell(from, to, 0) + off) == 0;
        return pages;
      };
      for (int peer = 0; peer < n; ++peer) {
        if (peer == rank) continue;
        for (auto [from, to] : {std::pair{rank, peer}, std::pair{peer, rank}}) {
          if (size_t pages = unmapped(from, to)) {
            failed += std::to_string(pages) + " pages of channel " + std::to_string(from) + "->" +
                      std::to_string(to) + " unmapped; ";
          }
        }
      }
      // The pair of the two others: the middle of its cells, beyond any
      // fault-around of this rank's own.
      const int a = (rank + 1) % n, b = (rank + 2) % n;
      if (table.present(seg->cell(a, b, 0) + span / 2) != 0) {
        failed += "channel " + std::to_string(a) + "->" + std::to_string(b) + " (not this rank's) mapped";
      }
    }
    bootstrap.barrier();  // no rank unmaps while another still checks
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back(rank_main, r);
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
}
