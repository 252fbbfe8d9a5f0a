#include "core/wait.h"

#include <sched.h>
#include <time.h>

namespace smddp {
namespace {

constexpr uint64_t kSpinPolls = 2000;   // ~ a few microseconds of pause loops
constexpr uint64_t kYieldPolls = 4000;  // then give the core away
constexpr long kNapNanos = 50'000;      // then short naps
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
  ++polls_;
  if (polls_ < kSpinPolls) {
    cpu_relax();
    return (polls_ & 1023) == 0;
  }
  if (polls_ < kYieldPolls) {
    sched_yield();
    return (polls_ & 255) == 0;
  }
  timespec nap{0, kNapNanos};
  nanosleep(&nap, nullptr);
  return (polls_ % kSlowCheckEvery) == 0 || polls_ == kYieldPolls;
}

}  // namespace smddp
