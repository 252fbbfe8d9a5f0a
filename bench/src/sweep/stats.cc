#include <algorithm>
#include <cmath>
#include <numeric>

#include "sweep/results.h"

namespace smddp::bench {

IterationStats compute_stats(std::vector<double> t) {
  IterationStats s;
  if (t.empty()) return s;
  std::sort(t.begin(), t.end());
  // Nearest-rank percentiles: the value at or above the fraction of samples.
  auto pct = [&](double p) {
    size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(t.size())));
    return t[std::min(t.size() - 1, rank == 0 ? 0 : rank - 1)];
  };
  s.min_us = t.front();
  s.max_us = t.back();
  s.p50_us = t[t.size() / 2];  // the upper median, as nccl-tests' -I report
  s.p95_us = pct(0.95);
  s.p99_us = pct(0.99);
  s.mean_us = std::accumulate(t.begin(), t.end(), 0.0) / static_cast<double>(t.size());
  double var = 0;
  for (double x : t) var += (x - s.mean_us) * (x - s.mean_us);
  var /= static_cast<double>(t.size());
  s.stdev_us = std::sqrt(var);
  s.cv = s.mean_us > 0 ? s.stdev_us / s.mean_us : 0;
  return s;
}

void BusbwAverages::add(const RowResult& r) {
  if (r.collective == Collective::Barrier) return;  // no bytes, no bandwidth
  Sum& c = by_collective_[{static_cast<int>(r.collective), r.backend}];
  c.total += r.busbw_gbps;
  ++c.n;
  Sum& b = by_backend_[r.backend];
  b.total += r.busbw_gbps;
  ++b.n;
}

std::optional<double> BusbwAverages::average(const std::string& backend,
                                             std::optional<Collective> collective) const {
  const Sum* s = nullptr;
  if (collective) {
    auto it = by_collective_.find({static_cast<int>(*collective), backend});
    if (it != by_collective_.end()) s = &it->second;
  } else {
    auto it = by_backend_.find(backend);
    if (it != by_backend_.end()) s = &it->second;
  }
  if (!s || s->n == 0) return std::nullopt;
  return s->total / static_cast<double>(s->n);
}

bool below_min_busbw(double avg, const BenchOptions& o) {
  return (o.min_busbw_set || o.min_busbw > 0) && avg < o.min_busbw;
}

std::string_view busbw_verdict(std::optional<double> avg, const BenchOptions& o) {
  if (!(o.min_busbw_set || o.min_busbw > 0) || !avg) return "";
  return below_min_busbw(*avg, o) ? "FAILED" : "OK";
}

SlowestGroup slowest_group(const RowResult& r) {
  SlowestGroup out;
  if (r.groups.size() < 2) return out;
  const GroupResult* fastest = &r.groups.front();
  for (const auto& g : r.groups) {
    if (!out.group || g.time_us > out.group->time_us) out.group = &g;
    if (g.time_us < fastest->time_us) fastest = &g;
  }
  out.fastest = fastest->group;
  out.slower_pct = fastest->time_us > 0 ? (out.group->time_us / fastest->time_us - 1) * 100 : 0;
  return out;
}

std::vector<std::pair<int, std::vector<int>>> RunContext::group_members() const {
  std::map<int, std::vector<int>> by_color;
  for (int r = 0; r < nranks; ++r) by_color[group_of(r)].push_back(r);
  return {by_color.begin(), by_color.end()};
}

std::string nccl_tests_program(Collective c) {
  switch (c) {
    case Collective::AllReduce: return "all_reduce_perf";
    case Collective::AllGather: return "all_gather_perf";
    case Collective::ReduceScatter: return "reduce_scatter_perf";
    case Collective::Broadcast: return "broadcast_perf";
    case Collective::Reduce: return "reduce_perf";
    case Collective::AllToAll: return "alltoall_perf";
    case Collective::AllToAllV: return "alltoallv_perf";
    case Collective::Gather: return "gather_perf";
    case Collective::Scatter: return "scatter_perf";
    case Collective::SendRecv: return "sendrecv_perf";
    case Collective::Barrier: return "barrier_perf";
  }
  return std::string(to_string(c)) + "_perf";
}

}  // namespace smddp::bench
