#include "algorithms/model_table.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <limits>
#include <optional>
#include <utility>

#include "patterns/schedule_for.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "smddp/model/linear_solve.h"
#include "smddp/traits.h"

namespace smddp::model_table {
namespace {

using schedule::Tier;

// The built-in figures (c), per tier, as data. Times in us, sizes in bytes.
// The per-step overhead is folded into alpha, as the fits of docs/model.md
// do. The network tier has its own reduction cost: bytes that arrive over
// the network are combined after they land, in series with the step, and
// algorithms differ in how many they combine (2 ranks: recursive doubling
// reduces the whole vector, ring and halving-doubling half of it), which a
// cost folded into beta cannot tell apart. In shared memory the reduction
// overlaps the copies and stays folded into beta. Refit on the cluster
// (smddp-model tune or fit) and set SMDDP_MODEL_FILE for better figures.
struct BuiltinTier {
  const char* name;  // network transport, or "shm"
  double alpha_us;
  double beta_us_per_byte;
  double gamma_us_per_byte;  // < 0: folded into beta
  const char* source;
};
constexpr BuiltinTier kShm = {
    "shm", 2.0, 0.00017, -1,
    "shm: 1 MiB shm_direct allreduce on 2 ranks in 182 us (docs/performance-history.md), latency assumed 2 us"};
// Issue 17's namespace cluster (docs/performance-history.md, 2026-12-05,
// veth between namespaces, unshaped): beta from 16 MiB hierarchical on 2
// hosts x 2 ranks (its schedule moves 16 MiB over each host's link). The
// socket row's alpha and gamma come from one regret.sh run (2026-12-06, 2
// hosts x 1 rank, allreduce out of place, medians of two rounds): alpha is
// recursive doubling's 8 B (one exchange, 12.4 us); gamma puts the
// recursive-doubling-to-ring crossover (2 alpha / gamma = 124 KiB) below
// 256 KiB-512 KiB, where the measured best changes (at 16 MiB the two
// differ by 0.0005 us/B: a reduction out of cache is slower, which a
// linear model cannot follow). The mpi row keeps its own 8 B latency.
constexpr BuiltinTier kNetwork[] = {
    {"socket", 12.4, 0.00104, 0.00020,
     "socket: namespace cluster, docs/performance-history.md: 16 MiB hierarchical 2x2 in 21.7 ms (2026-12-05); "
     "2x1 allreduce 8 B in 12.4 us, recursive doubling best up to 256 KiB, ring from 512 KiB (2026-12-06)"},
    {"mpi", 22.5, 0.00112, 0.00020,
     "mpi: namespace cluster, docs/performance-history.md (2026-12-05): 8 B allreduce 2x1 in 22.5 us, "
     "16 MiB hierarchical 2x2 in 23.2 ms; reduction as socket's (2026-12-06)"},
    // EFA: AWS publishes 400 Gbps of EFA per p4d.24xlarge (4 x 100 Gbps;
    // p5.48xlarge: 3200 Gbps); taken per host link, 50 GB/s. AWS publishes
    // no per-message latency: 21 us is what this engine's fabric transport
    // measured over libfabric (tcp provider) on the namespace cluster. The
    // reduction is the host's, as over sockets.
    {"fabric", 21.0, 0.00002, 0.00020,
     "fabric: AWS p4d.24xlarge EFA 400 Gbps (50 GB/s per host); latency 21 us as measured over libfabric tcp "
     "(docs/performance-history.md), no published EFA figure; reduction as socket's"},
};

model::TierParams tier_of(const BuiltinTier& b) {
  model::TierParams t;
  const bool gamma = b.gamma_us_per_byte >= 0;
  t.value = {b.alpha_us, b.beta_us_per_byte, gamma ? b.gamma_us_per_byte : 0.0, 0.0};
  t.determined = {true, true, gamma, false};
  t.note = {"", "", gamma ? "" : "folded into beta_us_per_byte", "folded into alpha_us"};
  return t;
}

const BuiltinTier& network_row(std::string_view transport) {
  for (const auto& b : kNetwork) {
    if (transport == b.name) return b;
  }
  return kNetwork[0];  // an unknown transport: the plainest one's figures
}

constexpr size_t kAny = std::numeric_limits<size_t>::max();

// A call whose data flows one way (broadcast: from the root) overlaps the
// next one: upstream ranks go on while the data still travels downstream,
// so in a run of calls (smddp-bench's timed loop, nccl-tests', a training
// job broadcasting its buckets) a call costs its busiest rank's share
// (predict_stream_us), and alone its whole time. Such a collective is
// ranked by the mean of a call in a run of kRunOfCalls: (alone + (k-1) x
// share) / k. The pick then costs at most k times the fastest one when a
// call comes alone (share <= alone): on 4-8 hosts the pipelined chain from
// 8 B (its share is one step, its time alone n-1 steps; the tree's log2 n
// either way), on 16 hosts and more the tree below a few KiB.
constexpr int kRunOfCalls = 4;

bool flows_one_way(Collective c) {
  return c == Collective::Broadcast || c == Collective::Reduce || c == Collective::Scatter ||
         c == Collective::Gather;
}

constexpr size_t kDtypeSize = 4;  // float32, as smddp-bench's default rows

// Predictions this close are a tie, broken by the registry's order (the
// ring first). Where algorithms move the same bytes at 1-16 MiB, a step
// fewer is worth under 2%, and on 1 Gbit/s links the ring's n-1 steps of a
// block measured 11-34% faster than halving-doubling (allreduce, 8x1) and
// steadier than recursive doubling (allgather) and recursive halving
// (reduce-scatter) on 4x1 (docs/performance-history.md, "Reduce-scatter
// by recursive halving").
constexpr double kNearTie = 0.02;

// One grid size: the accepting candidates, fastest first, with their times
// (a single candidate is not drawn: time < 0).
struct Point {
  size_t bytes;
  std::vector<std::pair<double, std::string>> ranked;
};

// A candidate's predicted time on topology `topo`; < 0 when its schedule
// declines there.
double predicted_on(const model::Model& m, const Selector& nested, Collective c, GroupKind group,
                    const schedule::Topology& topo, const schedule::Options& options, size_t bytes,
                    const std::string& name, std::vector<schedule::Transfer>& xs) {
  const bool one_way = flows_one_way(c);
  const schedule::Schedule s =
      schedule::make_for(nested, c, name, topo, group, bytes, kDtypeSize, options, one_way ? &xs : nullptr);
  if (!s.declined.empty()) return -1;
  const double alone = model::predict_us(m, s);
  return one_way ? (alone + (kRunOfCalls - 1) * model::predict_stream_us(m, s, xs)) / kRunOfCalls : alone;
}

// On the scale's own topology, or carried there from its proxies: never
// under the time of the largest proxy not above the job (more hosts never
// make a call faster), and declined when any proxy declines.
double carried_time(const model::Model& m, const Selector& nested, Collective c, GroupKind group, const Scale& scale,
                    const schedule::Options& options, size_t bytes, const std::string& name,
                    std::vector<schedule::Transfer>& xs) {
  if (scale.proxies.empty()) return predicted_on(m, nested, c, group, scale.topology, options, bytes, name, xs);
  schedule::Options as_job = options;
  as_job.cut_as_ranks = schedule::modelled_shape(c, group, scale.topology, bytes, options).group_size;
  double carried = 0, largest = 0;
  for (size_t k = 0; k < scale.proxies.size(); ++k) {
    const double t = predicted_on(m, nested, c, group, scale.proxies[k], as_job, bytes, name, xs);
    if (t < 0) return -1;
    carried += scale.weights[k] * t;
    if (scale.proxies[k].hosts <= scale.topology.hosts) largest = t;
  }
  return std::max(carried, largest);
}

Point rank_one(const model::Model& m, const Selector& nested, Collective c, GroupKind group, const Scale& scale,
               const schedule::Options& options, size_t bytes, const std::vector<std::string>& names,
               std::vector<schedule::Transfer>& xs) {
  Point p{bytes, {}};
  std::vector<std::string> accepting;
  for (const auto& n : names) {
    // The accept rule first, on the job's own topology: a declining algorithm is never drawn.
    if (!find_algorithm(c, n)->accepts(schedule::modelled_shape(c, group, scale.topology, bytes, options))) {
      accepting.push_back(n);
    }
  }
  if (accepting.size() == 1) {
    p.ranked.emplace_back(-1.0, accepting[0]);
    return p;
  }
  for (const auto& n : accepting) {
    const double t = carried_time(m, nested, c, group, scale, options, bytes, n, xs);
    if (t >= 0) p.ranked.emplace_back(t, n);
  }
  // Ties keep the registry's order.
  std::stable_sort(p.ranked.begin(), p.ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  if (p.ranked.empty()) return p;
  // Within kNearTie of the fastest the model cannot tell (its error is larger).
  auto registry_index = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) - names.begin(); };
  auto pick = p.ranked.begin();
  for (auto it = p.ranked.begin(); it != p.ranked.end() && it->first <= p.ranked.front().first * (1 + kNearTie); ++it) {
    if (registry_index(it->second) < registry_index(pick->second)) pick = it;
  }
  std::rotate(p.ranked.begin(), pick, pick + 1);
  return p;
}

// The rows of one collective on one group kind: runs of grid sizes with the
// same winner, merged.
void rank_collective(const model::Model& m, const Selector& nested, Collective c, GroupKind group,
                     const Scale& scale, const schedule::Options& options, std::vector<SelectionRule>& out) {
  const std::vector<std::string> names = schedule::algorithms(c);
  std::vector<Point> points;
  std::vector<schedule::Transfer> xs;  // kept across sizes: its pages are touched once
  for (size_t bytes = kGridMin; bytes <= kGridMax; bytes *= 2) {
    Point p = rank_one(m, nested, c, group, scale, options, bytes, names, xs);
    if (p.ranked.empty()) break;  // nothing accepts: the data rows decide from here
    points.push_back(std::move(p));
  }
  const bool open_ended = !points.empty() && points.back().bytes >= kGridMax;
  for (size_t i = 0; i < points.size(); ++i) {
    const bool last = i + 1 == points.size();
    if (!last && points[i + 1].ranked[0].second == points[i].ranked[0].second) continue;
    SelectionRule r{c, Scope::MultiNode, last && open_ended ? kAny : points[i].bytes, {}};
    r.group = group;
    r.at_bytes = points[i].bytes;
    for (const auto& [t, n] : points[i].ranked) {
      r.candidates.push_back(n);
      if (t >= 0) r.predicted_us.push_back(t);
    }
    r.source = r.predicted_us.empty() ? "model: the only algorithm that runs it" : "model";
    out.push_back(std::move(r));
  }
}

// The weights w that carry values on `proxies` to `hosts`: for each basis
// function f, sum_k w_k f(proxy_k) = f(hosts). The basis: 1, H, floor(log2
// H) and 1 / H; off powers of two also 1 / 2^floor(log2 H) (the halvings
// cut the vector by the power of two below the group's size, the ring by
// the size itself).
std::vector<double> carry_weights(int hosts, const std::vector<int>& proxies) {
  const size_t n = proxies.size();
  auto basis = [n](int h) {
    const int log = std::bit_width(unsigned(h)) - 1;
    std::vector<double> f{1.0, static_cast<double>(h), static_cast<double>(log), 1.0 / h, 1.0 / (1 << log)};
    f.resize(n);
    return f;
  };
  // A^T w = f(hosts), A's row k the basis at proxy k.
  std::vector<std::vector<double>> at(n, std::vector<double>(n));
  for (size_t k = 0; k < n; ++k) {
    const auto f = basis(proxies[k]);
    for (size_t j = 0; j < n; ++j) at[j][k] = f[j];
  }
  return model::solve_linear(std::move(at), basis(hosts));
}

}  // namespace

bool runs_on_cross(Collective c) { return c == Collective::AllReduce; }
bool runs_on_node(Collective c) { return c == Collective::ReduceScatter || c == Collective::AllGather; }

std::string Scale::text() const {
  if (proxies.empty()) return "";
  std::string hosts;
  for (const auto& p : proxies) hosts += (hosts.empty() ? "" : ", ") + std::to_string(p.hosts);
  return "drawn on " + hosts + " hosts x " + std::to_string(topology.ranks_per_host) + " ranks, carried to " +
         std::to_string(topology.hosts) + " hosts";
}

Scale modelled_scale(const JobShape& job) {
  Scale s;
  s.topology = {std::max(job.hosts, 1), std::clamp(job.ranks_per_host, 1, kProxyRanksPerHost)};
  const int hosts = s.topology.hosts;
  if (hosts <= kProxyHosts.back()) return s;
  const std::vector<int> proxies = std::has_single_bit(unsigned(hosts))
                                       ? std::vector<int>(kProxyHosts.begin(), kProxyHosts.end())
                                       : std::vector<int>(kProxyHostsOffPowersOfTwo.begin(), kProxyHostsOffPowersOfTwo.end());
  for (int h : proxies) s.proxies.push_back({h, s.topology.ranks_per_host});
  s.weights = carry_weights(hosts, proxies);
  return s;
}

Parameters builtin(std::string_view transport) {
  const BuiltinTier& net = network_row(transport);
  Parameters p;
  p.model.tier(Tier::Shm) = tier_of(kShm);
  p.model.tier(Tier::Network) = tier_of(net);
  p.source = std::string("built-in figures for ") + net.name + " (" + net.source + "; " + kShm.source + ")";
  return p;
}

Parameters parameters(const JobShape& job) {
  Parameters base = builtin(job.transport);
  if (const std::string path = config::text("SMDDP_MODEL_FILE"); !path.empty()) {
    Parameters p;
    try {
      p.model = model::load(path);
    } catch (const UsageError& e) {
      throw UsageError(std::string("SMDDP_MODEL_FILE: ") + e.what());  // names the file and why
    }
    p.source = "SMDDP_MODEL_FILE " + path;
    for (Tier t : {Tier::Shm, Tier::Network}) {
      if (p.model.tier(t).any_data()) continue;
      p.model.tier(t) = base.model.tier(t);
      p.source += std::string("; its ") + std::string(schedule::to_string(t)) + " tier has no data: built-in figures for " +
                  (t == Tier::Shm ? std::string("shm") : network_row(job.transport).name);
    }
    return p;
  }
  model::TierParams& net = base.model.tier(Tier::Network);
  const double builtin_gbps = 1e-3 / net.value[1];
  const std::string transport = network_row(job.transport).name;
  const bool probe_takes_over = job.probed && job.probed->gbytes_per_s < kProbeTakesOver * builtin_gbps;
  const std::optional<LinkFigures> link = job.link ? job.link : probe_takes_over ? job.probed : std::nullopt;
  char figures[96];
  if (link && link->gbytes_per_s > 0) {
    net.value[1] = 1e-3 / link->gbytes_per_s;  // us per byte
    if (link->latency_us > 0) net.value[0] = link->latency_us;
    std::snprintf(figures, sizeof figures, "%.3g GB/s", link->gbytes_per_s);
    base.source = "link figures from " + link->source + " (" + figures +
                  (link->latency_us > 0 ? "" : "; latency: built-in for " + transport) + "; shm: built-in)";
  } else if (job.probed) {
    std::snprintf(figures, sizeof figures, "%.3g GB/s, not under %.2g of theirs", job.probed->gbytes_per_s,
                  kProbeTakesOver);
    base.source += "; " + job.probed->source + ": " + figures;
  }
  return base;
}

bool wants_link_probe(const JobShape& job) {
  return config::flag("SMDDP_LINK_PROBE") && config::text("SMDDP_MODEL_FILE").empty() && !job.link &&
         (job.transport == "socket" || job.transport == "mpi");
}

double predicted_at(const model::Model& m, const Selector& nested, Collective c, GroupKind group, const Scale& scale,
                    size_t bytes, const std::string& algorithm, const schedule::Options& options) {
  std::vector<schedule::Transfer> xs;
  return carried_time(m, nested, c, group, scale, options, bytes, algorithm, xs);
}

Ranked rank(const Parameters& p, const JobShape& job, const std::vector<SelectionRule>& front,
            const std::vector<SelectionRule>& back) {
  Ranked out;
  out.parameters = p.source;
  out.scale = modelled_scale(job);
  if (job.hosts < 2) return out;
  schedule::Options options;
  options.shm_slot_bytes = config::bytes("SMDDP_SHM_SLOT_BYTES");
  options.dedicated_cores = job.dedicated_cores;
  options.cma = job.cma;
  auto with = [&](const std::vector<SelectionRule>& middle) {
    std::vector<SelectionRule> rules = front;
    rules.insert(rules.end(), middle.begin(), middle.end());
    rules.insert(rules.end(), back.begin(), back.end());
    return Selector(rules);
  };
  // The cross-node groups first: the world's hierarchical and sharded nest
  // their choices, as the engine will.
  std::vector<SelectionRule> cross;
  {
    const Selector nested = with({});
    for (Collective c : all_collectives()) {
      if (runs_on_cross(c)) rank_collective(p.model, nested, c, GroupKind::Cross, out.scale, options, cross);
    }
  }
  const Selector nested = with(cross);
  std::vector<SelectionRule> world;
  for (Collective c : all_collectives()) {
    rank_collective(p.model, nested, c, GroupKind::World, out.scale, options, world);
  }
  out.rules = std::move(cross);
  for (auto& r : world) out.rules.push_back(std::move(r));
  return out;
}

}  // namespace smddp::model_table
