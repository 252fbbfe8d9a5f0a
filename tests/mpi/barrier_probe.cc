#include "barrier_probe.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

namespace smddp::test {

BarrierProbe::BarrierProbe(const std::string& job, uint64_t seed, int rank, int nranks)
    : path_(std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/smddp-barrier-probe-" + job),
      seed_(seed),
      rank_(rank),
      nranks_(nranks) {
  const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  const size_t bytes = sizeof(uint64_t) * static_cast<size_t>(nranks);
  // Every rank sizes it alike; zeros or stale tokens read as "not arrived".
  if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    throw std::runtime_error("barrier probe: cannot create " + path_);
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) throw std::runtime_error("barrier probe: cannot map " + path_);
  slots_ = static_cast<uint64_t*>(p);
}

BarrierProbe::~BarrierProbe() { ::munmap(slots_, sizeof(uint64_t) * static_cast<size_t>(nranks_)); }

uint64_t BarrierProbe::token(uint64_t round) const {
  uint64_t x = seed_ * 0x9e3779b97f4a7c15ULL + round;  // splitmix64 finaliser
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void BarrierProbe::arrive(uint64_t round) { __atomic_store_n(&slots_[rank_], token(round), __ATOMIC_RELEASE); }

size_t BarrierProbe::missing(uint64_t round) const {
  // A rank past this barrier may already have announced the next round;
  // none can be further on while this rank has not entered it.
  size_t behind = 0;
  for (int r = 0; r < nranks_; ++r) {
    const uint64_t t = __atomic_load_n(&slots_[r], __ATOMIC_ACQUIRE);
    behind += t != token(round) && t != token(round + 1);
  }
  return behind;
}

void BarrierProbe::remove() const { ::unlink(path_.c_str()); }

std::string BarrierProbe::job_id() {
  for (const char* var : {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid"}) {
    if (const char* v = std::getenv(var); v && *v) return v;
  }
  const char* addr = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  if (addr && port) return std::string(addr) + "-" + port;
  return "";
}

}  // namespace smddp::test
