#include "sweep/sweep.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "sweep/barrier_check.h"
#include "cli/collective_spec.h"
#include "sweep/data.h"
#include "sweep/fabric_deltas.h"
#include "smddp/traits.h"
#include "supervision/watchdog.h"

namespace smddp::bench {
namespace {

constexpr double kStragglerFactor = 1.10;  // slower than the median rank by 10%
constexpr int kRounds = 4;                 // timed slices per measurement when comparing
constexpr int kStartupCalls = 100;         // tiny calls per backend before the first row
constexpr int kBarrierCheckRounds = 20;    // barriers per check, each entered after a random delay

// Iterations of slice `round` of `rounds`: the first iters % rounds get one more.
int slice_iters(int iters, int rounds, int round) { return iters / rounds + (round < iters % rounds ? 1 : 0); }

}  // namespace

SweepPlan plan_sweep(const BenchOptions& o, int nranks) {
  SweepPlan plan;
  plan.alltoallv = o.alltoallv;
  check_alltoallv_ranks(plan.alltoallv, nranks);
  const auto sizes = sweep_sizes(o);
  for (Collective c : o.collectives) {
    // -r -1: every rank in turn is the root, as nccl-tests (roots outside, sizes inside).
    std::vector<int> roots{o.root};
    if (o.all_roots && traits(c).has_root) {
      roots.resize(static_cast<size_t>(nranks));
      std::iota(roots.begin(), roots.end(), 0);
    }
    for (DataType t : o.dtypes) {
      std::vector<ReduceOp> ops = collective_reduces(c) ? o.ops : std::vector<ReduceOp>{ReduceOp::Sum};
      for (ReduceOp op : ops) {
        for (int root : roots) {
          for (size_t bytes : c == Collective::Barrier ? std::vector<size_t>{0} : sizes) {
            plan.rows.push_back({c, t, op, bytes, root});
            RowCounts rc = row_counts(c, bytes, t, nranks, plan.alltoallv);
            plan.max_send_bytes = std::max(plan.max_send_bytes, rc.send * dtype_size(t));
            plan.max_recv_bytes = std::max(plan.max_recv_bytes, rc.recv * dtype_size(t));
          }
        }
      }
    }
  }
  // -u: both buffers start up to unalign elements (of 8 bytes at most) later.
  plan.max_send_bytes += 8 * static_cast<size_t>(o.unalign);
  plan.max_recv_bytes += 8 * static_cast<size_t>(o.unalign);
  return plan;
}

Sweep::Sweep(const BenchOptions& o, const RunContext& ctx, Communicator& world, Communicator& group,
             std::vector<std::unique_ptr<Backend>> backends)
    : o_(o),
      ctx_(ctx),
      world_(world),
      group_(group),
      backends_(std::move(backends)),
      rank_(group.rank()),
      group_ranks_(group.size()) {
  for (int r = 0; r < group_ranks_; ++r) group_hosts_.push_back(group.host(r));
}

void Sweep::run(const SweepPlan& plan, const std::function<void(const std::vector<RowResult>&)>& on_row,
                const std::function<bool()>& stop) {
  // Sizes plus slack, in the memory --mem names.
  buffers_ = SweepBuffers::create(o_.mem, plan.max_send_bytes + 64, plan.max_recv_bytes + 64, o_.huge_pages);
  if (o_.huge_pages) {
    // The kernel may give fewer huge pages than asked (fragmented memory,
    // transparent_hugepage/defrag): say so, with the worst rank's share.
    double backed = buffers_->huge_page_fraction();
    world_.allreduce(&backed, &backed, 1, DataType::Float64, ReduceOp::Min);
    if (rank_ == 0 && backed < 0.9) {
      std::fprintf(stderr, "smddp-bench: --huge-pages: the kernel backs only %.0f%% of a rank's host buffers with huge "
                   "pages\n", 100 * backed);
    }
  }
  // Calls per backend before the first row: connection setup, lazy
  // initialisation and a freshly started process's first slow calls belong
  // to no row. It is the first row's collective, which a forced --algorithm
  // can run (it may exist for that collective only).
  const Collective first = plan.rows.empty() ? Collective::AllReduce : plan.rows.front().collective;
  for (auto& backend : backends_) {
    CollectiveArgs warm{first, buffers_->send(), buffers_->recv(), first == Collective::Barrier ? 0u : 1u,
                        DataType::Float32, ReduceOp::Sum, 0};
    warm.memory = o_.mem;
    const std::vector<size_t> none(static_cast<size_t>(group_ranks_), 0);  // alltoallv: empty parts
    warm.send_counts = warm.recv_counts = none.data();
    for (int i = 0; i < kStartupCalls; ++i) {
      Watchdog::instance().arm(first, backend->name());
      backend->run(warm);
      Watchdog::instance().disarm();
    }
    backend->sync();
    backend->barrier();
  }
  std::vector<Placement> placements;
  if (o_.placement != Placement::InPlace) placements.push_back(Placement::OutOfPlace);
  if (o_.placement != Placement::OutOfPlace) placements.push_back(Placement::InPlace);
  RowCounters counters(world_, ctx_.hosts);
  for (size_t i = 0; i < plan.rows.size(); ++i) {
    counters.before();
    std::vector<Measurement> ms;
    for (auto& backend : backends_) {
      for (Placement p : placements) ms.push_back(start(*backend, plan, plan.rows[i], p == Placement::InPlace));
    }
    // Alone, one slice; side by side, rounds of slices in turn. Every slice
    // is preceded by warm-up: the full count before the first, one after.
    const int rounds = ms.size() > 1 ? std::max(1, std::min(kRounds, o_.iters)) : 1;
    for (int round = 0; round < rounds; ++round) {
      const int warmup = round == 0 ? o_.warmup : std::min(o_.warmup, 1);
      for (auto& m : ms) time_slice(m, warmup, slice_iters(o_.iters, rounds, round));
    }
    std::vector<RowResult> results;
    for (auto& m : ms) {
      results.push_back(finish(m));
      results.back().row = i;
    }
    const auto deltas = counters.after();  // collective: every rank, every row
    for (auto& r : results) r.fabric_counters = deltas;
    // Ratio: the first backend's bandwidth over each one's (time for barrier).
    for (auto& r : results) {
      for (const auto& f : results) {
        if (f.backend != results.front().backend || f.in_place != r.in_place) continue;
        if (r.collective == Collective::Barrier || r.busbw_gbps <= 0) {
          r.ratio = f.time_us > 0 ? r.time_us / f.time_us : 1;
        } else {
          r.ratio = f.busbw_gbps / r.busbw_gbps;
        }
      }
      if (ctx_.memory_bandwidth_gbps > 0) r.roof_fraction = r.busbw_gbps / ctx_.memory_bandwidth_gbps;
    }
    on_row(results);
    if (stop && stop()) return;
  }
}

Sweep::Measurement Sweep::start(Backend& backend, const SweepPlan& plan, const SweepPlan::Row& row,
                                bool in_place) {
  const int n = group_ranks_;
  const CollectiveTraits& t = traits(row.collective);
  const RowCounts rc = row_counts(row.collective, row.bytes, row.dtype, n, plan.alltoallv);
  const size_t es = dtype_size(row.dtype);
  const int root = t.has_root ? row.root : -1;

  // -u: both buffers start unalign elements past their (page) alignment.
  char* const send_base = buffers_->send() + static_cast<size_t>(o_.unalign) * es;
  char* const recv_base = buffers_->recv() + static_cast<size_t>(o_.unalign) * es;
  void* sendp = send_base;
  void* recvp = recv_base;
  if (in_place) {
    if (t.in_place == InPlace::SendInRecv) {
      sendp = recv_base + rank_ * rc.count * es;
    } else if (t.in_place == InPlace::RecvInSend) {
      recvp = send_base + rank_ * rc.count * es;
    } else {
      sendp = recvp;
    }
  }
  Measurement m;
  m.backend = &backend;
  m.args = CollectiveArgs{row.collective, sendp, recvp, rc.count, row.dtype, row.op, std::max(root, 0)};
  m.args.memory = o_.mem;
  DataSpec spec{row.collective, row.dtype, row.op, o_.seed, n, std::max(root, 0)};
  if (t.per_peer()) {
    m.counts = std::make_shared<const CountMatrix>(alltoallv_counts(plan.alltoallv, n, rc.count, es));
    m.send_counts = m.counts->send_counts(rank_);
    m.recv_counts = m.counts->recv_counts(rank_);
    m.args.send_counts = m.send_counts.data();
    m.args.recv_counts = m.recv_counts.data();
    spec.counts = m.counts.get();
  }
  Watchdog& watchdog = Watchdog::instance();

  RowResult& r = m.result;
  r.collective = row.collective;
  r.dtype = row.dtype;
  r.op = row.op;
  r.root = root;
  r.bytes = rc.bytes;
  r.count = rc.elements;
  r.backend = std::string(backend.name());
  r.in_place = in_place;

  // Checking runs on fresh inputs before any timed iteration. A barrier
  // has no data: its check is that nobody leaves before all arrived.
  for (int c = 0; c < o_.check && row.collective == Collective::Barrier; ++c) {
    watchdog.arm(row.collective, backend.name(), r.bytes);
    m.wrong += check_barrier(group_, group_hosts_, o_.seed + static_cast<uint64_t>(c), kBarrierCheckRounds, [&] {
      backend.run(m.args);
      backend.sync();
    });
    watchdog.disarm();
  }
  // -B replaces -c's checking calls with its repeats (the first checked as -c checks).
  const int checks = o_.bitwise > 0 ? 0 : o_.check;
  if (o_.bitwise > 0 && row.collective != Collective::Barrier) {
    repeat_row(m, spec, sendp, recvp, rc.send, t.receives_on(rank_, root) ? rc.recv : 0, rc.count);
  }
  for (int c = 0; c < checks && row.collective != Collective::Barrier; ++c) {
    buffers_->fill_send(spec, rank_, sendp, rc.send);
    if (!in_place) buffers_->poison(recvp, rc.recv * es);
    watchdog.arm(row.collective, backend.name(), r.bytes);
    backend.run(m.args);
    backend.sync();
    watchdog.disarm();
    m.wrong += buffers_->count_wrong(spec, rank_, recvp, rc.count, rc.recv);
  }
  r.checked = o_.check > 0 || (o_.bitwise > 0 && row.collective != Collective::Barrier);
  m.times.reserve(static_cast<size_t>(o_.iters));
  return m;
}

void Sweep::time_slice(Measurement& m, int warmup, int iters) {
  Backend& backend = *m.backend;
  Watchdog& watchdog = Watchdog::instance();
  for (int w = 0; w < warmup; ++w) {
    watchdog.arm(m.args.collective, backend.name(), m.result.bytes);
    backend.run(m.args);
    watchdog.disarm();
  }
  backend.sync();
  backend.barrier();
  // Split groups start their timed calls together, as nccl-tests' barrier
  // over every rank lines them up: the groups contend as they run at once.
  if (&group_ != &world_) world_.barrier();
  if (o_.cuda_graph_launches > 0 && iters > 0) {  // -G: one time for the slice, per call
    watchdog.arm(m.args.collective, backend.name(), m.result.bytes);
    m.times.insert(m.times.end(), static_cast<size_t>(iters),
                   backend.time_graph_us(m.args, iters, o_.cuda_graph_launches));
    watchdog.disarm();
  }
  for (int it = 0; it < iters && o_.cuda_graph_launches == 0; ++it) {
    // -m: agg_iters calls make one timed iteration; its time is per call.
    double us = 0;
    for (int a = 0; a < o_.agg_iters; ++a) {
      watchdog.arm(m.args.collective, backend.name(), m.result.bytes);
      us += buffers_->time_us(backend, m.args);
      watchdog.disarm();
    }
    m.times.push_back(us / o_.agg_iters);
  }
  m.result.algorithm = backend.algorithm();  // the backend's last call was ours
}

RowResult Sweep::finish(Measurement& m) {
  const int n = ctx_.nranks;  // every rank of every group
  std::vector<double>& times = m.times;
  RowResult r = std::move(m.result);
  uint64_t wrong = m.wrong;
  r.iterations = static_cast<uint64_t>(o_.iters);

  // Across ranks: the iteration ends when its slowest rank does.
  double mine = times.empty() ? 0 : std::accumulate(times.begin(), times.end(), 0.0) / times.size();
  // Bookkeeping goes over our own engine, so it works under any bootstrap.
  std::vector<double> all(n);
  world_.allgather(&mine, all.data(), 1, DataType::Float64);
  switch (o_.average) {
    case Average::Rank0: r.time_us = all[0]; break;
    case Average::Mean: r.time_us = std::accumulate(all.begin(), all.end(), 0.0) / n; break;
    case Average::Min: r.time_us = *std::min_element(all.begin(), all.end()); break;
    case Average::Max: r.time_us = *std::max_element(all.begin(), all.end()); break;
  }
  if (o_.per_iteration) {
    // Every rank's samples (nccl-tests' per_process_max_times_us); an
    // iteration ends when its slowest rank does (times_us, the statistics).
    const size_t iters = times.size();
    std::vector<double> every(iters * static_cast<size_t>(n));
    if (iters > 0) world_.allgather(times.data(), every.data(), iters, DataType::Float64);
    r.iter_times_us.assign(iters, 0);
    r.rank_times_us.resize(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) {
      auto first = every.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(k) * iters);
      r.rank_times_us[k].assign(first, first + static_cast<std::ptrdiff_t>(iters));
      for (size_t i = 0; i < iters; ++i) r.iter_times_us[i] = std::max(r.iter_times_us[i], r.rank_times_us[k][i]);
    }
    r.skipped_iterations = std::clamp(o_.per_iter_skip, 0, static_cast<int>(iters > 0 ? iters - 1 : 0));
    r.stats = compute_stats(std::vector<double>(r.iter_times_us.begin() + r.skipped_iterations, r.iter_times_us.end()));
    if (rank_ != 0) {  // only rank 0 reports
      r.iter_times_us.clear();
      r.rank_times_us.clear();
    }
  }
  std::vector<double> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  const int slowest = static_cast<int>(std::max_element(all.begin(), all.end()) - all.begin());
  if (n > 1 && median > 0 && all[slowest] > kStragglerFactor * median) {
    r.straggler = Straggler{slowest, ctx_.hosts[slowest], (all[slowest] / median - 1) * 100};
  }
  if (m.bitwise) r.bitwise = gather_bitwise(m);
  if (&group_ != &world_) add_groups(r, all, wrong);
  world_.allreduce(&wrong, &wrong, 1, DataType::Uint64, ReduceOp::Sum);
  r.wrong = wrong;

  // Bandwidth over the group's rank count (the reported bandwidth is per
  // group, as nccl-tests says: N groups move N times as much).
  if (r.time_us > 0) {
    r.algbw_gbps = static_cast<double>(r.bytes) / 1e3 / r.time_us;  // bytes/us / 1e3 = GB/s
    r.busbw_gbps = r.algbw_gbps * bus_factor(r.collective, group_ranks_);
  }
  return r;
}

// Each group's own figures, on rank 0, from every rank's time (`times`, by
// world rank) and its wrong elements, size and count (gathered here: groups
// of different sizes round a row differently).
void Sweep::add_groups(RowResult& r, const std::vector<double>& times, uint64_t wrong) {
  const int n = ctx_.nranks;
  const uint64_t mine[3] = {wrong, r.bytes, r.count};
  std::vector<uint64_t> every(3 * static_cast<size_t>(n));
  world_.allgather(mine, every.data(), 3, DataType::Uint64);
  if (world_.rank() != 0) return;
  for (const auto& [color, ranks] : ctx_.group_members()) {
    GroupResult g;
    g.group = color;
    g.nranks = static_cast<int>(ranks.size());
    std::vector<double> t;
    for (int k : ranks) {
      t.push_back(times[static_cast<size_t>(k)]);
      g.wrong += every[3 * static_cast<size_t>(k)];
    }
    g.bytes = every[3 * static_cast<size_t>(ranks.front()) + 1];
    g.count = every[3 * static_cast<size_t>(ranks.front()) + 2];
    switch (o_.average) {
      case Average::Rank0: g.time_us = t.front(); break;  // the group's first rank
      case Average::Mean: g.time_us = std::accumulate(t.begin(), t.end(), 0.0) / static_cast<double>(t.size()); break;
      case Average::Min: g.time_us = *std::min_element(t.begin(), t.end()); break;
      case Average::Max: g.time_us = *std::max_element(t.begin(), t.end()); break;
    }
    if (g.time_us > 0) {
      g.algbw_gbps = static_cast<double>(g.bytes) / 1e3 / g.time_us;
      g.busbw_gbps = g.algbw_gbps * bus_factor(r.collective, g.nranks);
    }
    r.groups.push_back(g);
  }
}

}  // namespace smddp::bench
