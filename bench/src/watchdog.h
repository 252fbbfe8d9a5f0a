// A backstop for -T: a thread that ends the process (exit 3) when one
// collective call runs past the deadline plus a grace period. The smddp
// backend reports timeouts itself, naming the peer; MPI collectives cannot
// time out on their own, so this is what bounds them.
#pragma once

#include <atomic>
#include <string_view>
#include <thread>

#include "smddp/types.h"

namespace smddp::bench {

class Watchdog {
 public:
  static Watchdog& instance();
  ~Watchdog() { stop(); }
  // Starts the thread; `seconds` bounds each armed period. Call once.
  void start(double seconds, int rank, std::string host);
  void arm(Collective c, std::string_view backend);
  void disarm() { armed_at_ns_.store(0, std::memory_order_relaxed); }
  void stop();

 private:
  void loop();
  std::atomic<int64_t> armed_at_ns_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> collective_{0};
  std::atomic<const char*> backend_{""};
  double seconds_ = 0;
  int rank_ = 0;
  std::string host_;
  std::thread thread_;
};

}  // namespace smddp::bench
