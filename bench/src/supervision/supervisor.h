// A rank killed outright (SIGKILL, the OOM killer) cannot report itself, and
// launchers then end the job with 128+signal. So smddp-bench runs each rank
// in a child process: the parent only waits, forwards the signals a launcher
// sends, and turns a child killed by a signal nobody forwarded into one line
// naming the rank and host plus the lost-rank exit code. SMDDP_SUPERVISE=0
// runs the rank in the launched process itself.
#pragma once

#include <optional>

namespace smddp::bench {

// This process's rank as the launcher's environment gives it (MPI may not be
// started yet); null when no launcher variable is set.
const char* launcher_rank();

// Forks the rank. Returns nothing in the child (the rank: go on), and the
// exit code in the supervising parent once the child has ended. Call before
// any thread or library is started; it falls back to running unsupervised
// when fork fails.
std::optional<int> supervise_rank(int lost_rank_exit_code);

}  // namespace smddp::bench
