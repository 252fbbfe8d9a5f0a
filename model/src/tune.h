// smddp-model tune: a short probe on the job's own ranks, fitted into the
// model file the engine reads (docs/model.md, "Tune"). The planning is pure
// arithmetic over agreed figures (the same on every rank), here so that the
// unit tests hold it to its budget without ranks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "smddp/types.h"

namespace smddp::model {

struct TuneOptions {
  std::string output;
  double seconds = 30;                 // the whole run's budget
  uint64_t max_bytes = 64ull << 20;    // the largest row the probe times
};
// Every rank calls it under mpirun (or srun, torchrun-style variables). Exit
// code; usage problems found after the ranks connect are one line from rank 0.
int run_tune(const TuneOptions& o);

// Bounds of --seconds: long enough to time the latency rows at all, short
// enough for a job prolog.
inline constexpr double kTuneMinSeconds = 1;
inline constexpr double kTuneMaxSeconds = 600;

namespace tune {

inline constexpr uint64_t kMinBytes = 4096;  // the latency-bound end
inline constexpr uint64_t kMaxBytes = uint64_t{1} << 30;  // -e's bound: two buffers of it per rank
inline constexpr int kMinIterations = 3;     // a median needs a few
inline constexpr int kMaxIterations = 10;

// One (collective, algorithm) pair the probe times at every size.
struct Pair {
  Collective collective;
  std::string algorithm;
};

// Every host algorithm of allreduce, allgather and reduce_scatter: allreduce
// covers every tier and term, allgather (nothing reduced) separates the
// reduction γ from β, reduce_scatter reduces without allreduce's second half.
// Pairs whose schedule declines a call are skipped at run time.
std::vector<Pair> probe_pairs();

// The probe's sizes: 4 KiB, then x4 up to the largest size whose calls,
// `calls_per_size` of them at `us_per_byte` (a measured call's time over its
// bytes, an upper bound of the bandwidth term), take at most `share_us`
// together; at least two sizes (latency and one bandwidth point), at most
// `max_bytes`.
std::vector<uint64_t> plan_sizes(double us_per_byte, double share_us, int calls_per_size, uint64_t max_bytes);

// Iterations of one probe whose warm-up call took `call_us`, with
// `remaining_us` to the deadline shared by `probes_left` probes (this one
// included): kMinIterations..kMaxIterations from its share, fewer when even
// those would pass the deadline (with a margin of half a call each), and 0
// when not one fits.
int plan_iterations(double call_us, double remaining_us, int probes_left);

// The row bytes (the larger buffer, as smddp-bench's rows) and element count
// of a call near `bytes` on n ranks: per-rank counts for allgather and
// reduce_scatter, rounded down; 0 elements when the size is too small.
struct CallSize {
  uint64_t row_bytes = 0;
  size_t count = 0;
};
CallSize call_size(Collective c, uint64_t bytes, int nranks, size_t dtype_size);

}  // namespace tune
}  // namespace smddp::model
