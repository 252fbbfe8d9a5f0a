// Checks a barrier without trusting the engine: before each round every rank
// publishes the round's number in its slot of a file that all ranks map
// (the ranks of these tests share a filesystem, namespaced hosts too), and
// after the barrier each rank reads every slot. A slot still holding an
// older round means some rank had not arrived when this one left. Ranks
// enter after random delays, so a barrier that does not wait is caught.
// Rounds are written as seeded tokens, so a file left by an earlier job
// under the same name cannot pass for this one's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace smddp::test {

class BarrierProbe {
 public:
  // `job` names the file; `job` and `seed` must be the same on every rank.
  BarrierProbe(const std::string& job, uint64_t seed, int rank, int nranks);
  ~BarrierProbe();
  BarrierProbe(const BarrierProbe&) = delete;
  BarrierProbe& operator=(const BarrierProbe&) = delete;

  // Announces that this rank reached `round` (>= 1, increasing).
  void arrive(uint64_t round);
  // The number of ranks that have not announced `round` (nor, already,
  // round + 1): 0 after a real barrier.
  size_t missing(uint64_t round) const;
  // Removes the file; once, by one rank, after the last round everywhere.
  void remove() const;

  // A job id every rank of this launch sees alike (mpirun's PMIx namespace,
  // or the torchrun-style store's address), empty when none is known.
  static std::string job_id();

 private:
  uint64_t token(uint64_t round) const;

  std::string path_;
  uint64_t seed_;
  int rank_;
  int nranks_;
  uint64_t* slots_ = nullptr;
};

}  // namespace smddp::test
