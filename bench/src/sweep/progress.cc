#include "sweep/progress.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

namespace smddp::bench {

Progress::Progress(bool enabled, bool forced, size_t total) : total_(total) {
  if (!enabled) return;
  if (isatty(STDERR_FILENO)) {
    fd_ = STDERR_FILENO;
    return;
  }
  int tty = open("/dev/tty", O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (tty >= 0 && (forced || launcher_on_terminal())) {
    fd_ = tty;
    own_tty_ = true;
    // mpirun puts each rank in its own process group, never the
    // terminal's foreground one: with `stty tostop` a write would stop us.
    std::signal(SIGTTOU, SIG_IGN);
    return;
  }
  if (tty >= 0) close(tty);
  if (forced) fd_ = STDERR_FILENO;
}
Progress::~Progress() {
  if (own_tty_) close(fd_);
}

void Progress::update(size_t done) {
  if (fd_ < 0) return;
  if (own_tty_) let_launcher_print();
  double elapsed = seconds();
  double remaining = done ? elapsed / static_cast<double>(done) * static_cast<double>(total_ - done) : 0;
  char line[160];
  int n = std::snprintf(line, sizeof line, "\r\033[K[row %zu of %zu] elapsed %.0f s, remaining ~%.0f s", done, total_,
                        elapsed, remaining);
  put(line, static_cast<size_t>(std::max(0, std::min(n, static_cast<int>(sizeof line) - 1))));
}
void Progress::clear() {
  if (fd_ >= 0) put("\r\033[K", 4);
}

std::string Progress::exe_of(const std::string& pid) {
  char buf[4096];
  ssize_t n = readlink(("/proc/" + pid + "/exe").c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}
// The fields of /proc/PID/stat after the command name (which may hold
// spaces and parentheses): [0] state, [1] ppid, [2] pgrp, [4] tty_nr, [5] tpgid.
std::vector<long long> Progress::stat_fields(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<long long> fields;
  auto paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 4 > stat.size()) return fields;
  std::istringstream rest(stat.substr(paren + 4));  // skip ") S "
  fields.push_back(0);
  for (long long v; fields.size() < 6 && rest >> v;) fields.push_back(v);
  return fields;
}
// The launcher is the first ancestor that is not this program (the
// supervising parent runs the same binary): mpirun, orted, torchrun. Its
// stderr must be our controlling terminal (an fd opened through /dev/tty
// stats as /dev/tty itself, so the device comes from tty_nr) and its
// process group the terminal's foreground one.
bool Progress::launcher_on_terminal() {
  const auto self = stat_fields("self");
  if (self.size() < 6 || self[4] == 0) return false;
  const auto tty = static_cast<unsigned long long>(self[4]);
  const unsigned tty_major = (tty >> 8) & 0xfff, tty_minor = (tty & 0xff) | ((tty >> 12) & 0xfff00);
  const std::string exe = exe_of("self");
  long long pid = self[1];
  for (int depth = 0; depth < 4 && pid > 1; ++depth) {
    const auto f = stat_fields(std::to_string(pid));
    if (f.size() < 6) return false;
    if (!exe.empty() && exe_of(std::to_string(pid)) == exe) {
      pid = f[1];
      continue;
    }
    struct stat err {};
    if (stat(("/proc/" + std::to_string(pid) + "/fd/2").c_str(), &err) != 0) return false;
    return S_ISCHR(err.st_mode) && major(err.st_rdev) == tty_major && minor(err.st_rdev) == tty_minor &&
           f[2] == self[5];
  }
  return false;
}
// The table reaches the terminal through the launcher's pipe: let it get
// there before the progress line is drawn, or the row lands behind it.
void Progress::let_launcher_print() {
  std::fflush(stdout);
  for (int i = 0; i < 100; ++i) {
    int queued = 0;
    if (ioctl(STDOUT_FILENO, FIONREAD, &queued) != 0 || queued == 0) break;
    usleep(1000);
  }
  usleep(10000);
}
void Progress::put(const char* s, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd_, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // a terminal that went away is no reason to stop the sweep
    s += w;
    n -= static_cast<size_t>(w);
  }
}
double Progress::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

}  // namespace smddp::bench
