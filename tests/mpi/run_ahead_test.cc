// Back-to-back calls with no barrier between them, checked one by one:
// small broadcasts let their root run many calls ahead of its readers
// (lanes, algorithms/shm_steps.h), so a lane reused too early, or a switch
// between lanes and whole buffers that does not wait, shows up here as a
// wrong value. Each phase of 200 calls has one root: 150 small broadcasts
// while readers now and then sleep (the root runs far ahead), then small
// and large ones alternating (every call switches layout), then an
// allreduce. Exit 0 only when every element of every call matched: each
// rank exits 1 on its own wrong elements, and the printed total comes from
// MPI_Allreduce, never from the engine under test.
#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <vector>

#include "smddp/communicator.h"

using namespace smddp;

namespace {

constexpr int kCalls = 3000;
constexpr int kPhase = 200;
constexpr size_t kLarge = 70000;  // elements: far beyond a 4 KiB lane

size_t count_of(int i) {
  const int j = i % kPhase;
  if (j >= 150 && j % 2) return kLarge;
  return 1 + static_cast<size_t>(i * 37 % 1024);
}

// Seeded per run (rank 0's clock, printed), the same on every rank.
uint32_t value(uint64_t seed, int call, int root, size_t index) {
  uint64_t x = seed ^ (static_cast<uint64_t>(call) << 40) ^ (static_cast<uint64_t>(root) << 32) ^ index;
  x ^= x >> 33;  // splitmix-style finaliser: every bit of the inputs moves the value
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

}  // namespace

int main() {
  uint64_t wrong = 0;
  {
    auto comm = Communicator::create();
    const int n = comm->size();
    const int me = comm->rank();
    uint64_t seed = static_cast<uint64_t>(std::time(nullptr));
    comm->broadcast(&seed, &seed, 1, DataType::Uint64, 0);
    std::vector<uint32_t> send(kLarge), recv(kLarge);
    for (int i = 0; i < kCalls; ++i) {
      const size_t count = count_of(i);
      if (i % kPhase == kPhase - 1) {
        for (size_t k = 0; k < count; ++k) send[k] = value(seed, i, me, k);
        comm->allreduce(send.data(), recv.data(), count, DataType::Uint32, ReduceOp::Sum);
        for (size_t k = 0; k < count; ++k) {
          uint32_t want = 0;
          for (int r = 0; r < n; ++r) want += value(seed, i, r, k);
          wrong += recv[k] != want;
        }
        continue;
      }
      const int root = i / kPhase % n;
      if (me == root) {
        for (size_t k = 0; k < count; ++k) send[k] = value(seed, i, root, k);
      } else if (i % kPhase % 50 == 10) {
        usleep(2000);  // a reader falls behind; the root must not lap it
      }
      comm->broadcast(send.data(), recv.data(), count, DataType::Uint32, root);
      for (size_t k = 0; k < count; ++k) wrong += recv[k] != value(seed, i, root, k);
    }
    int mpi_up = 0;
    MPI_Initialized(&mpi_up);
    uint64_t total = wrong;  // without MPI (a TCP-store launch), this rank's own
    if (mpi_up) MPI_Allreduce(&wrong, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) {
      std::printf("%d calls on %d ranks, seed %llu: %llu wrong elements\n", kCalls, n,
                  static_cast<unsigned long long>(seed), static_cast<unsigned long long>(total));
    }
  }
  int mpi_up = 0;
  MPI_Initialized(&mpi_up);
  if (mpi_up) MPI_Finalize();
  return wrong ? 1 : 0;
}
