#include "isolate/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "isolate/chs_schedule.h"
#include "isolate/pairing.h"
#include "smddp/error.h"

namespace smddp::diag {
namespace {

// Independent streams of one seed: the same seed draws the same noise
// whatever the faults, so runs with and without a fault compare alike.
constexpr uint64_t kNoiseStream = 0x6A09E667F3BCC909ull, kFlapStream = 0xBB67AE8584CAA73Bull,
                   kCorruptStream = 0x3C6EF372FE94F82Bull;

void build_fabric(const SimSettings& s, SimRun& run) {
  const auto n = static_cast<size_t>(s.nodes);
  if (s.topology) {
    if (s.topology->size() < n) {
      throw UsageError(fmt::format("--simulate {}: the --topology file lists {} hosts", s.nodes, s.topology->size()));
    }
    for (const auto& [host, layers] : *s.topology) {
      if (run.labels.size() == n) break;
      run.labels.push_back(host);
      run.layers.push_back(layers);
    }
  } else {
    const int width = static_cast<int>(std::to_string(s.nodes - 1).size());
    for (int i = 0; i < s.nodes; ++i) {
      run.labels.push_back(fmt::format("sim-{:0{}}", i, width));
      // Racks of consecutive nodes, sizes differing by at most one.
      if (s.racks >= 2) {
        run.layers.push_back({"spine", fmt::format("rack-{}", static_cast<int64_t>(i) * s.racks / s.nodes)});
      } else {
        run.layers.emplace_back();
      }
    }
  }
  run.racks = rack_ids(run.layers);
}

// The links between network nodes that some pair of nodes crosses: from
// each label to the one above it (a top label with others beside it: to
// the layer above the file's). None in a flat fabric.
std::vector<std::pair<std::string, std::vector<int>>> uplinks(const SimRun& run) {
  std::map<std::vector<std::string>, std::vector<int>> below;
  for (size_t i = 0; i < run.layers.size(); ++i) {
    const auto& l = run.layers[i];
    for (size_t d = 0; d < l.size(); ++d) below[std::vector<std::string>(l.begin(), l.begin() + static_cast<std::ptrdiff_t>(d + 1))].push_back(static_cast<int>(i));
  }
  std::vector<std::pair<std::string, std::vector<int>>> out;
  for (auto& [prefix, nodes] : below) {
    if (nodes.size() == run.labels.size()) continue;
    const std::string name = prefix.size() > 1 ? prefix.back() + " -> " + prefix[prefix.size() - 2] : prefix.back() + " -> above";
    out.emplace_back(name, std::move(nodes));
  }
  return out;
}

int count_of(const SimSettings& s, FaultKind k) {
  for (const auto& f : s.faults) {
    if (f.kind == k) return f.count;
  }
  return 0;
}

double factor_of(const SimSettings& s, FaultKind k) {
  for (const auto& f : s.faults) {
    if (f.kind == k) return f.factor;
  }
  return 1;
}

void inject(const SimSettings& s, SimRun& run) {
  SplitMix rng(s.seed);
  const int slow = count_of(s, FaultKind::SlowNode), stall = count_of(s, FaultKind::Stall),
            corrupt = count_of(s, FaultKind::Corrupt);
  // More than half the fleet faulty leaves no healthy median to judge by.
  if (slow + stall + corrupt > s.nodes / 2) {
    throw UsageError(fmt::format("--faults: {} slow, stalled or corrupting nodes of {}: at most half the nodes",
                                 slow + stall + corrupt, s.nodes));
  }
  std::vector<int> nodes(static_cast<size_t>(s.nodes));
  for (int i = 0; i < s.nodes; ++i) nodes[static_cast<size_t>(i)] = i;
  rng.shuffle(nodes);
  for (int i = 0; i < slow + stall + corrupt; ++i) {
    InjectedFault f;
    f.kind = i < slow ? FaultKind::SlowNode : i < slow + stall ? FaultKind::Stall : FaultKind::Corrupt;
    f.factor = f.kind == FaultKind::Stall ? 1 : factor_of(s, f.kind);
    f.node = nodes[static_cast<size_t>(i)];
    run.faults.push_back(f);
  }
  const int links = count_of(s, FaultKind::SlowLink), flaps = count_of(s, FaultKind::Flap);
  if (links + flaps > 0) {
    auto candidates = uplinks(run);
    if (candidates.empty()) {
      // A flat fabric's only links: each node's own (named as the node).
      for (size_t i = 0; i < run.labels.size(); ++i) candidates.emplace_back(run.labels[i] + " access link", std::vector<int>{static_cast<int>(i)});
    }
    if (static_cast<size_t>(links + flaps) > candidates.size()) {
      throw UsageError(fmt::format("--faults: {} slow or flapping links; this fabric has {} to choose from", links + flaps,
                                   candidates.size()));
    }
    rng.shuffle(candidates);
    for (int i = 0; i < links + flaps; ++i) {
      InjectedFault f;
      f.kind = i < links ? FaultKind::SlowLink : FaultKind::Flap;
      f.factor = factor_of(s, f.kind);
      f.link = candidates[static_cast<size_t>(i)].first;
      f.below = candidates[static_cast<size_t>(i)].second;
      run.faults.push_back(f);
    }
  }
  // Stalls in the first or second round: before the run and mid-run.
  for (auto& f : run.faults) {
    if (f.kind == FaultKind::Stall) f.from_round = 1 + static_cast<int>(rng.below(2));
  }
}

}  // namespace

SimRun simulate(const SimSettings& s) {
  if (s.nodes < 2 || s.nodes > kMaxSimNodes) throw UsageError(fmt::format("--simulate: 2 to {} nodes", kMaxSimNodes));
  if (s.noise.samples.empty()) throw UsageError("--simulate: no noise samples");
  SimRun run;
  build_fabric(s, run);
  inject(s, run);
  const size_t n = run.labels.size();
  if (s.chs) {
    // The scanner's fixed pass mark, as a fraction of the healthy rate: its
    // a3plus and a3ultra settings pass 150 and 250 GB/s where such pairs
    // reach about 200 and 350 (docs/diag.md, "Simulation").
    run.schedule = std::make_unique<ChsSchedule>(s.nodes, 0.7 * kSimBusbwGbs, s.seed);
  } else {
    run.schedule = std::make_unique<Isolation>(run.labels, s.limits, run.racks, s.seed);
  }
  std::vector<double> node_factor(n, 1.0);
  std::vector<int> stalled_from(n, 0);
  std::vector<double> corrupt_rate(n, 0);
  for (const auto& f : run.faults) {
    if (f.kind == FaultKind::Corrupt) corrupt_rate[static_cast<size_t>(f.node)] = f.factor;
    if (f.kind == FaultKind::SlowNode) node_factor[static_cast<size_t>(f.node)] = 1 / f.factor;
    if (f.kind == FaultKind::Stall) stalled_from[static_cast<size_t>(f.node)] = f.from_round;
  }
  // Membership of each link fault's nodes, for the tests that cross it.
  std::vector<std::vector<char>> below;
  std::vector<const InjectedFault*> link_faults;
  for (const auto& f : run.faults) {
    if (f.kind != FaultKind::SlowLink && f.kind != FaultKind::Flap) continue;
    link_faults.push_back(&f);
    below.emplace_back(n, 0);
    for (int b : f.below) below.back()[static_cast<size_t>(b)] = 1;
  }
  SplitMix noise(s.seed ^ kNoiseStream), flap(s.seed ^ kFlapStream), wrong(s.seed ^ kCorruptStream);
  for (int round = 1;; ++round) {
    std::vector<NodeTest> tests = run.schedule->next_round();
    if (tests.empty() || round > 1000) break;
    std::vector<char> slow_now(link_faults.size());
    for (size_t i = 0; i < link_faults.size(); ++i) slow_now[i] = link_faults[i]->kind == FaultKind::SlowLink || flap.uniform() < 0.5;
    std::set<int> dead;
    double round_s = 0;
    for (auto& t : tests) {
      int silent = -1;
      double f = 1;
      for (int m : t.nodes) {
        f = std::min(f, node_factor[static_cast<size_t>(m)]);
        const int from = stalled_from[static_cast<size_t>(m)];
        if (from > 0 && round >= from && silent < 0) silent = m;
      }
      for (size_t i = 0; i < link_faults.size(); ++i) {
        if (!slow_now[i]) continue;
        size_t in = 0;
        for (int m : t.nodes) in += below[i][static_cast<size_t>(m)] ? 1 : 0;
        // An access link carries every test of its node; an uplink the
        // tests with nodes on both sides of it.
        const bool crosses = link_faults[i]->below.size() == 1 ? in > 0 : in > 0 && in < t.nodes.size();
        if (crosses) f = std::min(f, 1 / link_faults[i]->factor);
      }
      if (silent >= 0) {
        t.error = fmt::format("rank {} ({}) sent no result within {:.0f} s", silent, run.labels[static_cast<size_t>(silent)],
                              s.round_bound_s);
        dead.insert(silent);
        round_s = s.round_bound_s;
        continue;
      }
      for (int m : t.nodes) {
        const double rate = corrupt_rate[static_cast<size_t>(m)];
        if (rate > 0 && t.corruption.empty() && wrong.uniform() < rate) {
          t.corruption = fmt::format("rank {} ({}): wrong results (simulated)", m, run.labels[static_cast<size_t>(m)]);
        }
      }
      const NoiseSample& e = s.noise.samples[static_cast<size_t>(noise.below(s.noise.samples.size()))];
      const double k = static_cast<double>(t.nodes.size());
      t.busbw_gbs = kSimBusbwGbs * f * e.busbw;
      t.stream_gbs = t.pair() ? kSimStreamGbs * f * e.stream : 0;
      // The probes' time at these rates; a ring of k nodes moves 2(k-1)/k
      // of the bytes per rank where a pair moves 1.
      const double seconds =
          s.allreduce_seconds * (2 * (k - 1) / k) / (f * e.busbw) + (t.pair() ? s.stream_seconds / (f * e.stream) : 0);
      round_s = std::max(round_s, std::min(seconds + kSimRoundOverheadS, s.round_bound_s));
    }
    run.seconds += round_s;
    run.schedule->record(std::move(tests), dead);
  }
  return run;
}

nlohmann::json simulation_json(const SimRun& run, const SimSettings& s) {
  nlohmann::json faults = nlohmann::json::array();
  for (const auto& f : run.faults) {
    nlohmann::json j = {{"kind", fault_kind_name(f.kind)}};
    if (f.node >= 0) j["host"] = run.labels[static_cast<size_t>(f.node)];
    if (f.kind == FaultKind::Corrupt) j["rate"] = f.factor;
    if (f.kind != FaultKind::Stall && f.kind != FaultKind::Corrupt) j["factor"] = f.factor;
    if (f.kind == FaultKind::Stall) j["from_round"] = f.from_round;
    if (!f.link.empty()) {
      std::vector<std::string> hosts;
      for (int b : f.below) hosts.push_back(run.labels[static_cast<size_t>(b)]);
      j["link"] = f.link;
      // The nodes below the link: a named pair with one end among them
      // crosses it; one host: an access link, found when that host is named.
      j["hosts"] = hosts;
    }
    faults.push_back(j);
  }
  return {{"nodes", s.nodes},
          {"seed", s.seed},
          {"racks", *std::max_element(run.racks.begin(), run.racks.end()) + 1},
          {"schedule", s.chs ? "cluster-health-scanner" : "isolate"},
          {"noise", {{"source", s.noise.source}, {"samples", s.noise.samples.size()}}},
          {"nominal", {{"allreduce_busbw_gbs", kSimBusbwGbs}, {"stream_gbs", kSimStreamGbs}, {"round_overhead_s", kSimRoundOverheadS}}},
          {"simulated_seconds", run.seconds},
          {"faults", faults}};
}

}  // namespace smddp::diag
