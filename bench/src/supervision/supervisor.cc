#include "supervision/supervisor.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "smddp/config.h"

namespace smddp::bench {
namespace {

constexpr int kForwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_forwarded_signal = 0;

void forward(int sig) {
  g_forwarded_signal = sig;
  if (g_child <= 0) return;
  kill(static_cast<pid_t>(g_child), sig);
  // A stopped rank (SIGSTOP, a hang being inspected) acts on an ending signal
  // only once continued; without this it would outlive the job's teardown.
  if (sig != SIGUSR1 && sig != SIGUSR2) kill(static_cast<pid_t>(g_child), SIGCONT);
}

bool disabled() { return !config::flag("SMDDP_SUPERVISE"); }

std::string host_name() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

// Ends this process the way the child ended, so the launcher sees the
// signal it sent take effect.
int die_like(int sig) {
  signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
  raise(sig);
  return 128 + sig;  // not reached for terminating signals
}

}  // namespace

const char* launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "RANK"}) {
    if (const char* v = std::getenv(var)) return v;
  }
  return nullptr;
}

std::optional<int> supervise_rank(int lost_rank_exit_code) {
  if (disabled()) return std::nullopt;
  std::fflush(stdout);
  std::fflush(stderr);
  // Block the forwarded signals across fork: one arriving before the handler
  // is installed is then delivered to it, not lost or fatal to the parent.
  sigset_t forwarded, previous;
  sigemptyset(&forwarded);
  for (int sig : kForwarded) sigaddset(&forwarded, sig);
  sigprocmask(SIG_BLOCK, &forwarded, &previous);
  pid_t parent = getpid();
  pid_t child = fork();
  if (child < 0) {
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    return std::nullopt;
  }
  if (child == 0) {
    // The rank must not outlive its supervisor (a launcher's SIGKILL).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(lost_rank_exit_code);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    return std::nullopt;
  }
  g_child = child;
  struct sigaction sa {};
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : kForwarded) sigaction(sig, &sa, nullptr);
  sigprocmask(SIG_SETMASK, &previous, nullptr);

  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) {
      std::fprintf(stderr, "smddp-bench: lost track of rank process %d: %s\n", child, std::strerror(errno));
      return lost_rank_exit_code;
    }
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  int sig = WTERMSIG(status);
  if (sig == g_forwarded_signal) return die_like(sig);
  std::fprintf(stderr, "smddp-bench: rank %s on %s (pid %d) was killed by signal %d (%s)%s\n",
               launcher_rank() ? launcher_rank() : "0", host_name().c_str(), child, sig, strsignal(sig),
               WCOREDUMP(status) ? ", core dumped" : "");
  return lost_rank_exit_code;
}

}  // namespace smddp::bench
