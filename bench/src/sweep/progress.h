// smddp-bench's progress line (run.cc draws it after each row).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace smddp::bench {

// Progress on a terminal only: one line, rewritten in place. Run directly,
// that is stderr when it is a terminal. Under mpirun no rank's stderr is a
// terminal, so rank 0 writes to its controlling terminal (/dev/tty) when the
// launcher's own stderr is that terminal and the launch is the terminal's
// foreground job: with `mpirun ... 2>log`, in logs and in the background it
// stays silent. --progress forces it: /dev/tty when there is one, else stderr.
class Progress {
 public:
  Progress(bool enabled, bool forced, size_t total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void update(size_t done);
  void clear();

 private:
  static std::string exe_of(const std::string& pid);
  static std::vector<long long> stat_fields(const std::string& pid);
  static bool launcher_on_terminal();
  static void let_launcher_print();
  void put(const char* s, size_t n);
  double seconds() const;

  int fd_ = -1;
  bool own_tty_ = false;
  size_t total_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace smddp::bench
