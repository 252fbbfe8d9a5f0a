#include "core/wait.h"

#include <sched.h>
#include <time.h>

namespace smddp {
namespace {

struct Phases {
  uint64_t spin;   // polls with a pause instruction
  uint64_t yield;  // then polls that give the core away
  long nap_ns;     // then short naps
};
// A core each: the data is usually a few hundred nanoseconds away.
constexpr Phases kDedicated{2000, 4000, 50'000};
// Shared cores: the peer we wait for may need ours to run at all.
constexpr Phases kShared{32, 512, 20'000};
constexpr uint64_t kSlowCheckEvery = 256;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

bool Backoff::pause() {
  const Phases& p = shared_cores_ ? kShared : kDedicated;
  ++polls_;
  if (polls_ < p.spin) {
    cpu_relax();
    return (polls_ & 1023) == 0;
  }
  if (polls_ < p.yield) {
    sched_yield();
    return (polls_ & 255) == 0;
  }
  timespec nap{0, p.nap_ns};
  nanosleep(&nap, nullptr);
  return (polls_ % kSlowCheckEvery) == 0 || polls_ == p.yield;
}

}  // namespace smddp
