// A backstop for -T: a thread that ends the process (exit 3) when one
// collective call runs past the deadline plus a grace period. The smddp
// backend reports timeouts itself, naming the peer; MPI collectives cannot
// time out on their own, so this is what bounds them. Arming and disarming
// also publish the call to the hang report's board (hang_report.h); on a
// timeout, and on SIGUSR1, the thread prints where the host's ranks stand.
#pragma once

#include <atomic>
#include <functional>
#include <string_view>
#include <thread>

#include "supervision/hang_report.h"

#include "smddp/types.h"

namespace smddp::bench {

class Watchdog {
 public:
  static Watchdog& instance();
  // SIGUSR1 asks for the hang report (the supervisor forwards it, mpirun
  // too): from here on it no longer ends the rank. Call first in the rank.
  static void catch_report_signal();
  ~Watchdog() { stop(); }
  // Starts the thread; `seconds` bounds each armed period. Call once.
  void start(double seconds, int rank, std::string host);
  void arm(Collective c, std::string_view backend, size_t bytes = 0);
  void disarm() {
    armed_at_ns_.store(0, std::memory_order_relaxed);
    ProgressBoard::instance().leave();
  }
  void stop();
  // Rank 0: called with the hang report before the process ends on a timeout
  // (it records the report in the result files). Set before start().
  void on_timeout(std::function<void(const HangReport&)> f) { on_timeout_ = std::move(f); }

 private:
  void loop();
  std::atomic<int64_t> armed_at_ns_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> collective_{0};
  std::atomic<const char*> backend_{""};
  double seconds_ = 0;
  int rank_ = 0;
  std::string host_;
  std::function<void(const HangReport&)> on_timeout_;
  std::thread thread_;
};

}  // namespace smddp::bench
