// Open MPI's coll/tuned algorithms, forced one at a time, so that one run
// compares smddp with MPI's default decision and with each of MPI's own
// algorithms (`--backend smddp,mpi,mpi:ring,mpi:rabenseifner`). Users who
// tune Open MPI compare with the best of these, not with the default.
//
// Open MPI reads a forced algorithm when a communicator is created, from
// the coll_tuned_<collective>_algorithm control variables; MPI_T writes
// them at run time. The variables only count when dynamic rules are on,
// which is read once in MPI_Init: request_mpi_tuned_rules() sets it first.
#pragma once

#include <string>
#include <vector>

#include <string_view>

namespace smddp::bench {

// "mpi" and "mpi:ALGORITHM" are MPI backends.
bool is_mpi_backend(const std::string& backend);
// The backend name's algorithm part: "mpi:ring" -> "ring"; "" for "mpi" and
// the other backends.
std::string mpi_tuned_name(const std::string& backend);

// Turns on Open MPI's dynamic rules (OMPI_MCA_coll_tuned_use_dynamic_rules)
// unless the user set them. Call before MPI_Init, on every rank. Without a
// forced algorithm or a rules file they keep the default decision.
void request_mpi_tuned_rules();

// The algorithms Open MPI's coll/tuned offers for one of its collectives
// ("allreduce", "bcast", ...: the <collective> of its variable names), after
// MPI_Init; empty when there is no such variable (no coll/tuned).
std::vector<std::string> mpi_tuned_algorithms(std::string_view tuned_collective);

// While it lives, communicators created get `algorithm` on each of
// `tuned_collectives` that offers it; the others keep the default decision.
// Throws UsageError, naming what is offered, when none of them offers it.
class MpiTunedForce {
 public:
  MpiTunedForce(const std::string& algorithm, const std::vector<std::string_view>& tuned_collectives);
  ~MpiTunedForce();
  MpiTunedForce(const MpiTunedForce&) = delete;
  MpiTunedForce& operator=(const MpiTunedForce&) = delete;
  bool forces(std::string_view tuned_collective) const;

 private:
  struct Saved {
    int index;
    int value;
    std::string collective;
  };
  std::vector<Saved> saved_;
};

}  // namespace smddp::bench
