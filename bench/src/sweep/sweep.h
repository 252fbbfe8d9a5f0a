// The sweep: every (collective, dtype, op, size) row, every backend
// interleaved on the same buffers, out-of-place and in-place. Within a row
// the timed iterations run in rounds that alternate between the backends
// and placements, each slice after its own warm-up, so that drift on a busy
// machine (and whatever the first runner warms up for the next) lands on
// all of them alike.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "cli/alltoallv_matrix.h"
#include "backends/backend.h"
#include "backends/device_memory.h"
#include "reporters/reporter.h"
#include "sweep/bitwise.h"
#include "sweep/data.h"
#include "sweep/results.h"

namespace smddp::bench {

struct SweepPlan {
  struct Row {
    Collective collective;
    DataType dtype;
    ReduceOp op;
    size_t bytes;  // requested, before rounding
    int root = 0;  // rooted collectives: -r, or each rank in turn with -r -1
  };
  std::vector<Row> rows;
  size_t max_send_bytes = 0, max_recv_bytes = 0;
  AlltoallvPattern alltoallv;  // the job's (alltoallv_matrix.h)
};

SweepPlan plan_sweep(const BenchOptions& o, int nranks);

class Sweep {
 public:
  // `world` (every rank of the job) carries the harness's own bookkeeping
  // (times, #wrong); the backends run on `group`, this rank's split group
  // (`world` itself without a split): the data and its check are the
  // group's, the rows aggregate every group.
  Sweep(const BenchOptions& o, const RunContext& ctx, Communicator& world, Communicator& group,
        std::vector<std::unique_ptr<Backend>> backends);

  // Runs every row; calls `on_row` on every rank with the results (rank 0's
  // hold the aggregated numbers). After each row, a `stop` that returns true
  // (on every rank alike) ends the sweep early. Throws smddp::Error on failure.
  void run(const SweepPlan& plan, const std::function<void(const std::vector<RowResult>&)>& on_row,
           const std::function<bool()>& stop = {});

 private:
  // One backend and placement of a row, while its rounds run.
  struct Measurement {
    Backend* backend = nullptr;
    CollectiveArgs args;
    RowResult result;
    uint64_t wrong = 0;
    std::vector<double> times;  // per timed iteration, this rank
    // alltoallv: the row's counts; args points into the vectors (kept by moves).
    std::shared_ptr<const CountMatrix> counts;
    std::vector<size_t> send_counts, recv_counts;
    // -B: this rank's comparisons, gathered by finish().
    std::optional<RepeatRecord> bitwise;
  };
  Measurement start(Backend& backend, const SweepPlan& plan, const SweepPlan::Row& row, bool in_place);
  // -B: the row's repeats on identical inputs, each output compared on this rank.
  void repeat_row(Measurement& m, const DataSpec& spec, void* sendp, void* recvp, size_t send_elements,
                  size_t output_elements, size_t count);
  // -B: every rank's comparisons gathered (over the whole job), those across ranks made.
  RowBitwise gather_bitwise(const Measurement& m);
  void time_slice(Measurement& m, int warmup, int iters);
  RowResult finish(Measurement& m);
  void add_groups(RowResult& r, const std::vector<double>& times, uint64_t wrong);

  const BenchOptions& o_;
  const RunContext& ctx_;
  Communicator& world_;
  Communicator& group_;
  std::vector<std::unique_ptr<Backend>> backends_;
  int rank_ = 0;         // in the group
  int group_ranks_ = 1;  // the group's size
  std::vector<std::string> group_hosts_;  // by group rank
  std::unique_ptr<SweepBuffers> buffers_;  // host or device (--mem)
};

}  // namespace smddp::bench
