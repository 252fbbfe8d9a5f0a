// MPI plumbing for the multi-rank diagnostics: a session object (init and
// finalize), detection of a launch under mpirun/srun, and point-to-point
// exchanges that give up at a deadline, so one stuck rank is reported by
// name instead of hanging the whole preflight.
#pragma once

#include <mpi.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace smddp::diag {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// Inputs are bounded (common::kMaxSeconds); the cap is a guard: a duration
// past the clock's int64 nanoseconds would wrap into the past, a deadline
// already missed, and a healthy peer would be reported as silent.
inline Deadline deadline_in(double seconds) {
  constexpr double kCap = 1e9;  // about 31 years; 1e18 ns of the 9.2e18 an int64 holds
  const double s = !(seconds < kCap) ? kCap : seconds;
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// True when a process manager started us (Open MPI's mpirun, PMIx, Slurm PMI).
// Without one the tools run alone and never call MPI_Init.
bool launched_by_mpi();

// MPI_Init_thread on construction (unless already initialised), MPI_Finalize
// on destruction. Errors on MPI_COMM_WORLD return instead of aborting.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Ends the whole job now (a peer is stuck and MPI_Finalize would wait for it).
  [[noreturn]] void abort(int code);

 private:
  int rank_ = 0;
  int size_ = 1;
  bool owns_ = false;
};

// Spins briefly, then yields, then sleeps: ranks outnumber cores in tests and
// a busy waiter must not starve the peer it waits for.
class Backoff {
 public:
  void pause();
  void reset() { spins_ = 0; }

 private:
  int spins_ = 0;
};

// Sends `data` to `dest`; false when it did not complete by the deadline.
bool send_until(MPI_Comm comm, int dest, int tag, const std::string& data, Deadline deadline);
// Receives one message from `src` (MPI_ANY_SOURCE allowed); nullopt at the deadline.
std::optional<std::string> recv_until(MPI_Comm comm, int src, int tag, Deadline deadline, int* from = nullptr);

// Every rank gives `mine`; the root gets one entry per rank (nullopt for a
// rank whose message did not arrive in time), the others get an empty vector.
std::vector<std::optional<std::string>> gather_until(MPI_Comm comm, int root, const std::string& mine, int tag,
                                                     Deadline deadline);

// The root sends per_rank[r] to every rank r != root and returns per_rank[root];
// the others return what they received, or nullopt at the deadline.
std::optional<std::string> scatter_until(MPI_Comm comm, int root, const std::vector<std::string>& per_rank, int tag,
                                         Deadline deadline);

// MPI error code -> text.
std::string mpi_error_string(int code);

}  // namespace smddp::diag
