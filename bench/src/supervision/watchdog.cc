#include "supervision/watchdog.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace smddp::bench {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The engine's own deadline fires first and names the peer; this only
// catches what cannot time out by itself.
constexpr double kGraceSeconds = 2;

volatile sig_atomic_t g_report_requested = 0;
void request_report(int) { g_report_requested = 1; }

}  // namespace

Watchdog& Watchdog::instance() {
  static Watchdog w;
  return w;
}

void Watchdog::catch_report_signal() {
  struct sigaction sa {};
  sa.sa_handler = request_report;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
}

void Watchdog::start(double seconds, int rank, std::string host) {
  seconds_ = seconds;
  rank_ = rank;
  host_ = std::move(host);
  thread_ = std::thread([this] { loop(); });
}

void Watchdog::arm(Collective c, std::string_view backend, size_t bytes) {
  ProgressBoard::instance().enter(c, bytes);
  collective_.store(static_cast<int>(c), std::memory_order_relaxed);
  backend_.store(backend.data(), std::memory_order_relaxed);
  armed_at_ns_.store(now_ns(), std::memory_order_relaxed);
}

void Watchdog::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Watchdog::loop() {
  const auto limit = static_cast<int64_t>((seconds_ + kGraceSeconds) * 1e9);
  while (!stop_.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ProgressBoard& board = ProgressBoard::instance();
    if (g_report_requested) {
      g_report_requested = 0;
      if (board.reports()) print_hang_report(board.read("signal"));
    }
    int64_t armed = armed_at_ns_.load(std::memory_order_relaxed);
    if (armed == 0 || now_ns() - armed < limit) continue;
    auto c = static_cast<Collective>(collective_.load());
    std::fprintf(stderr,
                 "smddp-bench: rank %d on %s: %s (%s backend) timed out after %.0f s; a peer did not take part "
                 "(the %s backend cannot say which)\n",
                 rank_, host_.c_str(), std::string(to_string(c)).c_str(), backend_.load(), seconds_,
                 backend_.load());
    std::fflush(stderr);
    if (board.reports()) {
      const HangReport report = board.read("timeout");
      print_hang_report(report);
      if (on_timeout_) on_timeout_(report);
    }
    board.let_rank0_report();
    _exit(3);
  }
}

}  // namespace smddp::bench
