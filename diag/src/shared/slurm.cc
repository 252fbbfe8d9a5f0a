#include "shared/slurm.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fcntl.h>

#include <cstdlib>

#include "shared/text.h"

extern char** environ;

namespace smddp::diag {

std::string run_capture(const std::vector<std::string>& args, bool* ok) {
  *ok = false;
  int fds[2];
  if (pipe(fds) != 0) return "";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string out;
  if (rc == 0) {
    char buf[4096];
    for (;;) {
      ssize_t n = read(fds[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  close(fds[0]);
  if (rc != 0) return "";
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  *ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return out;
}

std::string slurm_node_name(const std::string& host) {
  if (const char* name = std::getenv("SLURMD_NODENAME"); name && *name) return name;
  const char* list = std::getenv("SLURM_JOB_NODELIST");
  if (!list || !*list) return host;
  bool ok = false;
  const std::string text = run_capture({"scontrol", "show", "hostnames", list}, &ok);
  if (!ok) return host;
  std::vector<std::string> names;
  for (const auto& line : split(text, '\n')) {
    if (std::string n(trim(line)); !n.empty()) names.push_back(n);
  }
  const std::string short_host = host.substr(0, host.find('.'));
  for (const auto& n : names) {
    if (n == host) return n;
  }
  for (const auto& n : names) {
    if (n == short_host || n.substr(0, n.find('.')) == short_host) return n;
  }
  return names.size() == 1 ? names.front() : host;
}

}  // namespace smddp::diag
