#include "sweep/barrier_check.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>

#include "smddp/common/crypto.h"
#include "smddp/error.h"

namespace smddp::bench {
namespace {

// One host's announcements: a slot per rank of the job, mapped shared.
class Segment {
 public:
  Segment(const std::string& name, bool create, size_t slots) : bytes_(slots * sizeof(uint64_t)) {
    const int fd = create ? ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600)
                          : ::shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0 || (create && ::ftruncate(fd, static_cast<off_t>(bytes_)) != 0)) {
      const int err = errno;
      if (fd >= 0) ::close(fd);
      throw TransportError("barrier check: shared memory " + name + ": " + std::strerror(err));
    }
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) throw TransportError("barrier check: cannot map " + name);
    slots_ = static_cast<uint64_t*>(p);
  }
  ~Segment() { ::munmap(slots_, bytes_); }
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  void store(int rank, uint64_t round) { __atomic_store_n(&slots_[rank], round, __ATOMIC_RELEASE); }
  uint64_t load(int rank) const { return __atomic_load_n(&slots_[rank], __ATOMIC_ACQUIRE); }

 private:
  size_t bytes_;
  uint64_t* slots_ = nullptr;
};

}  // namespace

size_t check_barrier(Communicator& comm, const std::vector<std::string>& hosts, uint64_t seed, int rounds,
                     const std::function<void()>& barrier) {
  const int me = comm.rank(), n = comm.size();
  // An unguessable name from rank 0, one segment per host, made by the
  // host's lowest rank (O_EXCL, 0600) before the others open it, and
  // unlinked once all have it mapped.
  uint64_t nonce[2];
  crypto::random_bytes(nonce, sizeof nonce);
  comm.broadcast(nonce, nonce, 2, DataType::Uint64, 0);
  int leader = 0;
  while (hosts[leader] != hosts[me]) ++leader;
  char name[80];
  std::snprintf(name, sizeof name, "/smddp-barrier-%016llx%016llx-%d", static_cast<unsigned long long>(nonce[0]),
                static_cast<unsigned long long>(nonce[1]), leader);
  std::vector<int> sync(n);  // allgathers order the steps; never the barrier under test
  std::unique_ptr<Segment> seg;
  if (me == leader) seg = std::make_unique<Segment>(name, true, n);
  comm.allgather(&me, sync.data(), 1, DataType::Int32);
  if (me != leader) seg = std::make_unique<Segment>(name, false, n);
  comm.allgather(&me, sync.data(), 1, DataType::Int32);
  if (me == leader) ::shm_unlink(name);

  std::mt19937_64 delays(seed ^ (0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(me + 1)));
  size_t missing = 0;
  for (uint64_t round = 1; round <= static_cast<uint64_t>(rounds); ++round) {
    ::usleep(static_cast<useconds_t>(delays() % 2000));
    seg->store(me, round);
    barrier();
    for (int r = 0; r < n; ++r) missing += hosts[r] == hosts[me] && seg->load(r) < round;
  }
  return missing;
}

}  // namespace smddp::bench
