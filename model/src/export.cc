// export: the model as other simulators' inputs.
//  - SimAI's analytical mode reads a bus-bandwidth file: a name line, then
//    per parallelism group (TP, DP, EP) "<collective>,: <busbw GB/s>" (null
//    for none) and "PP:" with "busbw: <GB/s>".
//  - ASTRA-sim reads a network file (topology, npus_count, bandwidth GB/s,
//    latency ns per dimension) and a system file (JSON: the collective
//    implementation per dimension, scheduling, local memory bandwidth).
// Groups: TP = the ranks of one host (shared memory), DP = one rank per host
// across the hosts (network), EP = every rank; PP = a pair of hosts.
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>

#include "smddp/error.h"
#include "smddp/tools/atomic_file.h"
#include "smddp/tools/paths.h"
#include "verbs.h"

namespace smddp::model {
namespace {

constexpr size_t kFloat = 4;

// The best predicted algorithm of `c` on `t` at `bytes` (none: empty name).
Prediction best(const Model& m, Collective c, const schedule::Topology& t, uint64_t bytes) {
  Prediction b;
  for (const auto& p : predict_all(m, c, t, bytes, kFloat)) {
    if (p.time_us <= 0) continue;  // a tier without data predicts nothing
    if (b.algorithm.empty() || p.time_us < b.time_us) b = p;
  }
  return b;
}

std::string busbw_or_null(const Model& m, Collective c, const schedule::Topology& t, uint64_t bytes) {
  if (t.ranks() < 2) return "null";
  const Prediction p = best(m, c, t, bytes);
  return p.algorithm.empty() ? "null" : fmt::format("{:.3f}", p.busbw_gbps);
}

std::string simai_text(const Model& m, const ExportOptions& o) {
  const schedule::Topology tp{1, o.ranks_per_host}, dp{o.hosts, 1}, ep{o.hosts, o.ranks_per_host}, pp{2, 1};
  std::string s = fmt::format("smddp-model_{}x{}_{}B\n", o.hosts, o.ranks_per_host, o.bytes);
  const std::pair<const char*, schedule::Topology> groups[] = {{"TP", tp}, {"DP", dp}, {"EP", ep}};
  for (const auto& [name, t] : groups) {
    s += std::string(name) + ":\n";
    s += "allreduce,: " + busbw_or_null(m, Collective::AllReduce, t, o.bytes) + "\n";
    s += "allgather,: " + busbw_or_null(m, Collective::AllGather, t, o.bytes) + "\n";
    s += "reducescatter,: " + busbw_or_null(m, Collective::ReduceScatter, t, o.bytes) + "\n";
    s += "alltoall,: " + busbw_or_null(m, Collective::AllToAll, t, o.bytes) + "\n";
  }
  s += "PP:\nbusbw: " + busbw_or_null(m, Collective::SendRecv, pp, o.bytes) + "\n";
  return s;
}

// ASTRA-sim's names for the closest native implementation.
std::string astra_name(const std::string& ours) {
  if (ours == "ring") return "ring";
  if (ours == "halving_doubling" || ours == "recursive_doubling") return "halvingDoubling";
  if (ours == "tree") return "doubleBinaryTree";
  return "direct";  // sharded, direct, pairwise, shm_direct, cma: every peer at once
}

double gbps(double beta) { return beta > 0 ? 1e-3 / beta : 0; }

}  // namespace

int run_export(const ExportOptions& o, std::ostream& out) {
  if (o.simai.empty() && o.astra_sim.empty()) throw UsageError("export: give --simai FILE and/or --astra-sim DIR");
  if (o.hosts < 1 || o.ranks_per_host < 1) throw UsageError("--hosts and --ranks-per-host must be >= 1");
  if (!o.astra_sim.empty() && o.hosts == 1 && o.ranks_per_host == 1) {
    throw UsageError("export --astra-sim: one host with one rank has no network to describe");
  }
  // The model and the bounds, and every output, before anything is created (docs/model.md#bounds).
  const Model m = load(o.model);
  if (const std::string why = scale_problem(o.hosts, o.ranks_per_host, o.bytes, m.options); !why.empty()) {
    throw UsageError("export --hosts " + std::to_string(o.hosts) + " --ranks-per-host " + std::to_string(o.ranks_per_host) +
                     " --bytes " + std::to_string(o.bytes) + ": " + why);
  }
  tools::check_writable(o.simai, "--simai");
  bool astra_dir_exists = false;
  if (!o.astra_sim.empty()) {
    std::error_code ec;
    astra_dir_exists = std::filesystem::exists(o.astra_sim, ec);
    if (astra_dir_exists && !std::filesystem::is_directory(o.astra_sim, ec)) {
      throw UsageError("--astra-sim '" + o.astra_sim + "': not a directory");
    }
    if (astra_dir_exists) {
      tools::check_writable(o.astra_sim + "/network.yml", "--astra-sim");
      tools::check_writable(o.astra_sim + "/system.json", "--astra-sim");
    } else {
      tools::check_writable(o.astra_sim, "--astra-sim");  // its parent directory takes a new entry
    }
  }
  if (!o.simai.empty()) {
    tools::write_atomically(o.simai, simai_text(m, o));
    out << "wrote " << o.simai << "\n";
  }
  if (!o.astra_sim.empty()) {
    // Dimensions: the host's ranks (shared memory), then the hosts. On the
    // network each rank gets its share of the host's link.
    const TierParams& shm = m.tier(Tier::Shm);
    const TierParams& net = m.tier(Tier::Network);
    std::vector<int> npus;
    std::vector<double> bw, lat;
    std::vector<std::string> ar, ag, rs, a2a;
    auto dim = [&](const schedule::Topology& t, const TierParams& p, double share, int count) {
      npus.push_back(count);
      bw.push_back(gbps(p.value[1]) / share);
      lat.push_back((p.value[0] + p.value[3]) * 1e3);
      ar.push_back(astra_name(best(m, Collective::AllReduce, t, o.bytes).algorithm));
      ag.push_back(astra_name(best(m, Collective::AllGather, t, o.bytes).algorithm));
      rs.push_back(astra_name(best(m, Collective::ReduceScatter, t, o.bytes).algorithm));
      a2a.push_back(astra_name(best(m, Collective::AllToAll, t, o.bytes).algorithm));
    };
    if (o.ranks_per_host > 1) dim({1, o.ranks_per_host}, shm, 1, o.ranks_per_host);
    if (o.hosts > 1) dim({o.hosts, 1}, net, o.ranks_per_host, o.hosts);
    auto list = [](const auto& v, auto fmt_one) {
      std::string s = "[ ";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + fmt_one(v[i]);
      return s + " ]";
    };
    std::string yml;
    yml += "topology: " + list(npus, [](int) { return std::string("Switch"); }) + "\n";
    yml += "npus_count: " + list(npus, [](int n) { return std::to_string(n); }) + "\n";
    yml += "bandwidth: " + list(bw, [](double v) { return fmt::format("{:.6g}", v); }) + "  # GB/s\n";
    yml += "latency: " + list(lat, [](double v) { return fmt::format("{:.6g}", v); }) + "  # ns\n";
    nlohmann::json sys = {{"scheduling-policy", "LIFO"},
                          {"endpoint-delay", 10},
                          {"active-chunks-per-dimension", 1},
                          {"preferred-dataset-splits", 4},
                          {"all-reduce-implementation", ar},
                          {"all-gather-implementation", ag},
                          {"reduce-scatter-implementation", rs},
                          {"all-to-all-implementation", a2a},
                          {"collective-optimization", "localBWAware"},
                          {"local-mem-bw", gbps(shm.value[1])},
                          {"boost-mode", 0}};
    if (!astra_dir_exists) {
      std::error_code ec;
      std::filesystem::create_directories(o.astra_sim, ec);
      if (ec) throw Error("--astra-sim '" + o.astra_sim + "': cannot create the directory: " + ec.message());
    }
    tools::write_atomically(o.astra_sim + "/network.yml", yml);
    tools::write_atomically(o.astra_sim + "/system.json", sys.dump(4) + "\n");
    out << "wrote " << o.astra_sim << "/network.yml and system.json\n";
  }
  return 0;
}

}  // namespace smddp::model
