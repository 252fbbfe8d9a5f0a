// Waiting without starving peers: spin briefly (the data is usually a few
// hundred nanoseconds away), then yield, then sleep in short naps. Ranks
// often outnumber cores, and a spinning rank would hold the core its peer
// needs to produce the data.
#pragma once

#include <chrono>
#include <cstdint>

namespace smddp {

using Clock = std::chrono::steady_clock;

class Deadline {
 public:
  Deadline() : when_(Clock::time_point::max()) {}
  explicit Deadline(double seconds)
      : when_(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(seconds))) {}
  bool expired() const { return Clock::now() >= when_; }

 private:
  Clock::time_point when_;
};

class Backoff {
 public:
  // shared_cores: this host's ranks share cores (the communicator's
  // Placement), so spinning would burn the core a peer needs: give it away
  // almost at once.
  explicit Backoff(bool shared_cores) : shared_cores_(shared_cores) {}

  // One failed poll. Returns true every ~100 ms of sleeping, when the caller
  // should run its slower checks (deadline, peer liveness).
  bool pause();
  void reset() { polls_ = 0; }

 private:
  bool shared_cores_;
  uint64_t polls_ = 0;
};

}  // namespace smddp
