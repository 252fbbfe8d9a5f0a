// A backend runs one collective call on buffers the harness owns. The same
// harness drives every backend on the same sizes, so rows compare directly.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "smddp/communicator.h"
#include "smddp/error.h"

namespace smddp::bench {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Runs one call (NCCL count and in-place conventions); throws smddp::Error.
  virtual void run(const CollectiveArgs& args) = 0;
  // The algorithm that ran the last call.
  virtual std::string algorithm() const = 0;
  // The engine's count of calls on its communicator (Communicator::calls():
  // the "call #N" of its errors and SMDDP_TEST_FLIP's CALL); 0 for backends
  // that do not run on the engine.
  virtual uint64_t engine_calls() const { return 0; }
  // Waits until the calls issued so far are complete (device backends).
  virtual void sync() {}
  // A collective-free barrier for lining up ranks between rows.
  virtual void barrier() = 0;
  // The cudaStream_t the backend's device work runs on (null: host-driven).
  virtual void* stream() { return nullptr; }
  // nccl-tests -G: `iters` calls captured into one CUDA graph, launched
  // `launches` times; microseconds per call. Only the NCCL backend (the
  // command line refuses -G for the others).
  virtual double time_graph_us(const CollectiveArgs&, int, int) {
    throw UsageError(std::string(name()) + ": -G/--cudagraph needs the NCCL backend");
  }
};

std::unique_ptr<Backend> make_smddp_backend(Communicator& comm, const std::string& algorithm);
// `tuned`: an Open MPI coll/tuned algorithm to force ("ring") on those of
// the collectives `run` that offer it, or "" for MPI's default decision
// (mpi_tuned.h). `group` >= 0: the backend runs on this rank's split group,
// MPI_COMM_WORLD's ranks of that colour (MPI_Comm_split, ordered by world
// rank); collective over MPI_COMM_WORLD then.
std::unique_ptr<Backend> make_mpi_backend(const std::string& tuned = "", const std::vector<Collective>& run = {},
                                          int group = -1);
// What `--backend mpi:NAME` can force: each collective's MPI call as Open
// MPI's coll/tuned names it (its coll_tuned_<call>_algorithm variable) and
// the algorithms that variable offers, read from this MPI library through
// MPI_T. Empty lists without coll/tuned. `smddp-bench --list-algorithms
// --backend mpi` prints it, for scripts that time each one (regret.sh).
struct MpiTunedAlgorithms {
  Collective collective;
  std::string call;
  std::vector<std::string> algorithms;
};
std::vector<MpiTunedAlgorithms> mpi_tuned_algorithm_list();
// CUDA builds only: NCCL on device local_rank % devices, its unique id spread
// through `comm`; waits are bounded by comm.timeout().
std::unique_ptr<Backend> make_nccl_backend(Communicator& comm);

}  // namespace smddp::bench
