// smddp-diag isolate: finds the bad node or link of a job with collective
// tests between node pairs, re-paired until each failure is pinned down
// (docs/diag.md, "Isolate"). Rank 0 plans every round; every rank runs its
// part under the round's deadline and reports; a rank that does not report
// is named and left out of later rounds.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "commands.h"
#include "fabric/pingpong.h"
#include "isolate/probes.h"
#include "isolate/report.h"
#include "isolate/simulator.h"
#include "isolate/topology.h"
#include "shared/text.h"
#include "isolate/verdict.h"
#include "preflight/checks.h"
#include "preflight/cluster.h"
#include "preflight/counter_check.h"
#include "preflight/preflight_metrics.h"
#include "preflight/profile.h"
#include "preflight/writers.h"
#include "shared/counter_watch.h"
#include "shared/files.h"
#include "shared/model_floor.h"
#include "shared/mpi_util.h"
#include "smddp/tools/cli_numbers.h"
#include "smddp/common/sizes.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "smddp/tools/atomic_file.h"
#include "smddp/tools/exit_codes.h"
#include "smddp/tools/paths.h"
#include "smddp/version.h"

namespace smddp::diag {
namespace {

// Tags per round, so a late message of one round never matches another.
constexpr int kTagBase = 16000, kMaxRounds = 1000;
int tag(int round, int kind) { return kTagBase + 4 * round + kind; }  // kind: 0 plan, 1 report, 2 allreduce, 3 stream

// Small sends that complete on their own; buffers live until the process ends.
class Outbox {
 public:
  void post(MPI_Comm comm, int dest, int t, std::string data) {
    buffers_.push_back(std::make_unique<std::string>(std::move(data)));
    MPI_Request r;
    MPI_Isend(buffers_.back()->data(), static_cast<int>(buffers_.back()->size()), MPI_BYTE, dest, t, comm, &r);
    MPI_Request_free(&r);
  }

 private:
  std::vector<std::unique_ptr<std::string>> buffers_;
};

struct Job {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  std::vector<std::string> hosts;         // per rank
  std::vector<int> node_of, local_index;  // per rank
  std::vector<std::vector<int>> ranks_of; // per node
  std::vector<std::string> labels;        // per node
  std::vector<std::string> instance_ids;  // per node: its EC2 instance id, or ""
  std::string who(int r) const { return fmt::format("rank {} ({})", r, hosts.at(static_cast<size_t>(r))); }
};

// `instance_id`: this host's EC2 instance id ("" when unknown), for --topology.
Job make_job(const std::string& instance_id) {
  Job j;
  MPI_Comm_dup(MPI_COMM_WORLD, &j.comm);
  MPI_Comm_set_errhandler(j.comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(j.comm, &j.rank);
  MPI_Comm_size(j.comm, &j.size);
  constexpr int kLen = 256;
  // Host name, then a newline and the instance id (neither holds a newline).
  std::string mine = hostname() + "\n" + instance_id;
  mine.resize(kLen - 1, '\0');
  std::vector<char> all(static_cast<size_t>(kLen * j.size));
  MPI_Allgather(mine.c_str(), kLen, MPI_CHAR, all.data(), kLen, MPI_CHAR, j.comm);
  std::map<std::string, int> node_by_host;
  for (int r = 0; r < j.size; ++r) {
    const std::string both(all.data() + static_cast<size_t>(r * kLen));
    const size_t nl = both.find('\n');
    const std::string h = both.substr(0, nl);
    auto [it, fresh] = node_by_host.emplace(h, static_cast<int>(j.ranks_of.size()));
    if (fresh) {
      j.ranks_of.emplace_back();
      j.labels.push_back(h);
      j.instance_ids.push_back(nl == std::string::npos ? "" : both.substr(nl + 1));
    }
    j.hosts.push_back(h);
    j.node_of.push_back(it->second);
    j.local_index.push_back(static_cast<int>(j.ranks_of[static_cast<size_t>(it->second)].size()));
    j.ranks_of[static_cast<size_t>(it->second)].push_back(r);
  }
  return j;
}

struct Settings {
  AllreduceProbe allreduce;
  StreamProbe stream;
  double round_timeout_s = 30;
  IsolateLimits limits;
  double margin_s() const { return 2 + 0.2 * round_timeout_s; }  // plan and report traffic
  double round_bound_s() const { return round_timeout_s + margin_s(); }
};

// One rank's part of a round: the group allreduce, then the pair stream.
nlohmann::json run_part(const Job& job, const nlohmann::json& plan, const Settings& s, int round) {
  nlohmann::json report = {{"error", ""}, {"corruption", ""}, {"busbw", 0.0}, {"stream", 0.0}, {"left", false}};
  const Deadline deadline = deadline_in(s.round_timeout_s);
  const auto group = plan["group"].get<std::vector<int>>();
  ProbeResult a = probe_allreduce(job.comm, group, s.allreduce, tag(round, 2), deadline, job.hosts);
  report["busbw"] = a.gbytes_per_s;
  report["left"] = a.left_requests;
  // Wrong results do not end the test: the partner, which may not have
  // seen them, goes on to the stream too.
  report["corruption"] = a.corruption;
  if (!a.error.empty()) {
    report["error"] = a.error;
    return report;
  }
  const int partner = plan.value("partner", -1);
  if (partner >= 0) {
    ProbeResult b = probe_stream(job.comm, partner, s.stream, tag(round, 3), deadline, job.hosts);
    report["stream"] = b.gbytes_per_s;
    report["left"] = b.left_requests;
    if (!b.error.empty()) report["error"] = b.error;
  }
  return report;
}

struct RootState {
  std::set<int> dead_ranks;
  bool unclean = false;  // requests left in flight or ranks lost: end with MPI_Abort
};

// Rank 0: plans a round, takes part, collects and records it. False when done.
bool root_round(const Job& job, const Settings& s, Isolation& iso, RootState& st, Outbox& out) {
  std::vector<NodeTest> tests = iso.next_round();
  if (tests.empty()) return false;
  const int round = iso.rounds();
  if (round >= kMaxRounds) return false;
  std::cerr << fmt::format("smddp-diag isolate: round {}: {} test(s), ends within {:.0f} s\n", round, tests.size(),
                           s.round_bound_s());
  const Deadline collect_by = deadline_in(s.round_bound_s());
  std::vector<nlohmann::json> plans(static_cast<size_t>(job.size), nlohmann::json{{"round", round}, {"idle", true}});
  std::vector<int> test_of(static_cast<size_t>(job.size), -1);
  for (size_t t = 0; t < tests.size(); ++t) {
    std::vector<int> group;
    for (int n : tests[t].nodes) {
      for (int r : job.ranks_of[static_cast<size_t>(n)]) group.push_back(r);
    }
    for (int r : group) {
      nlohmann::json p = {{"round", round}, {"group", group}, {"partner", -1}};
      if (tests[t].pair()) {
        const int me = job.node_of[static_cast<size_t>(r)];
        const int other = tests[t].nodes[0] == me ? tests[t].nodes[1] : tests[t].nodes[0];
        const auto& peers = job.ranks_of[static_cast<size_t>(other)];
        const int li = job.local_index[static_cast<size_t>(r)];
        if (li < static_cast<int>(peers.size())) p["partner"] = peers[static_cast<size_t>(li)];
      }
      plans[static_cast<size_t>(r)] = p;
      test_of[static_cast<size_t>(r)] = static_cast<int>(t);
    }
  }
  for (int r = 1; r < job.size; ++r) {
    if (!st.dead_ranks.count(r)) out.post(job.comm, r, tag(round, 0), plans[static_cast<size_t>(r)].dump());
  }
  std::vector<std::optional<nlohmann::json>> reports(static_cast<size_t>(job.size));
  if (!plans[0].contains("idle")) reports[0] = run_part(job, plans[0], s, round);
  for (int r = 1; r < job.size; ++r) {
    if (st.dead_ranks.count(r) || test_of[static_cast<size_t>(r)] < 0) continue;
    if (auto got = recv_until(job.comm, r, tag(round, 1), collect_by)) reports[static_cast<size_t>(r)] = nlohmann::json::parse(*got);
  }
  std::set<int> dead_nodes;
  std::vector<std::vector<std::string>> errors(tests.size()), corruptions(tests.size());
  std::vector<double> slowest_busbw(tests.size(), 1e300), stream_sum(tests.size(), 0);
  for (int r = 0; r < job.size; ++r) {
    const int t = test_of[static_cast<size_t>(r)];
    if (t < 0) continue;
    const auto& rep = reports[static_cast<size_t>(r)];
    if (!rep) {
      st.dead_ranks.insert(r);
      st.unclean = true;
      dead_nodes.insert(job.node_of[static_cast<size_t>(r)]);
      errors[static_cast<size_t>(t)].push_back(fmt::format("{} sent no result within {:.0f} s", job.who(r), s.round_bound_s()));
      continue;
    }
    st.unclean |= (*rep)["left"].get<bool>();
    if (const auto e = (*rep)["error"].get<std::string>(); !e.empty()) errors[static_cast<size_t>(t)].push_back(job.who(r) + ": " + e);
    if (const auto c = (*rep)["corruption"].get<std::string>(); !c.empty()) corruptions[static_cast<size_t>(t)].push_back(job.who(r) + ": " + c);
    slowest_busbw[static_cast<size_t>(t)] = std::min(slowest_busbw[static_cast<size_t>(t)], (*rep)["busbw"].get<double>());
    if (job.node_of[static_cast<size_t>(r)] == tests[static_cast<size_t>(t)].nodes[0]) {
      stream_sum[static_cast<size_t>(t)] += (*rep)["stream"].get<double>();
    }
  }
  for (size_t t = 0; t < tests.size(); ++t) {
    // The silent rank first: the others' errors follow from it.
    std::sort(errors[t].begin(), errors[t].end(), [](const std::string& a, const std::string& b) {
      return (a.find("sent no result") != std::string::npos) > (b.find("sent no result") != std::string::npos);
    });
    if (!errors[t].empty()) tests[t].error = errors[t].front() + (errors[t].size() > 1 ? fmt::format(" (+{} more)", errors[t].size() - 1) : "");
    if (!corruptions[t].empty()) {
      tests[t].corruption = corruptions[t].front() + (corruptions[t].size() > 1 ? fmt::format(" (+{} more ranks)", corruptions[t].size() - 1) : "");
    }
    tests[t].busbw_gbs = slowest_busbw[t] < 1e300 ? slowest_busbw[t] : 0;
    tests[t].stream_gbs = stream_sum[t];
  }
  iso.record(std::move(tests), dead_nodes);
  return true;
}

// Rank 0, after the last round: every node's fabric counter deltas over the
// rounds (its first rank's), within the margin of one round. Nodes without
// counters, or whose first rank is lost or silent, have none.
std::vector<std::optional<CounterDeltas>> gather_counters(const Job& job, const Settings& s, int round,
                                                          const std::optional<CounterWatch>& mine,
                                                          const RootState& st, Outbox& out) {
  std::vector<std::optional<CounterDeltas>> by_node(job.labels.size());
  if (mine) by_node[0] = mine->deltas();
  for (int r = 1; r < job.size; ++r) {
    if (!st.dead_ranks.count(r)) out.post(job.comm, r, tag(round, 0), nlohmann::json{{"counters", true}}.dump());
  }
  const Deadline by = deadline_in(s.margin_s());
  for (size_t n = 1; n < job.ranks_of.size(); ++n) {
    const int leader = job.ranks_of[n].front();
    if (st.dead_ranks.count(leader)) continue;
    if (auto got = recv_until(job.comm, leader, tag(round, 1), by)) {
      by_node[n] = counter_deltas_from_json(nlohmann::json::parse(*got, nullptr, false));
    }
  }
  return by_node;
}

// "slow-node sim-0003 x2, stall sim-0007 from round 2", or "none".
std::string injected_text(const SimRun& sim) {
  std::vector<std::string> parts;
  for (const auto& f : sim.faults) {
    const std::string where = f.node >= 0 ? sim.labels[static_cast<size_t>(f.node)] : f.link;
    parts.push_back(f.kind == FaultKind::Stall     ? fmt::format("stall {} from round {}", where, f.from_round)
                    : f.kind == FaultKind::Corrupt ? fmt::format("corrupt {} at rate {:g}", where, f.factor)
                                                   : fmt::format("{} {} x{:g}", fault_kind_name(f.kind), where, f.factor));
  }
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, ", "));
}

class IsolateCommand final : public Command {
 public:
  IsolateCommand(CLI::App& parent, const GlobalOptions& global) : global_(global) {
    app_ = parent.add_subcommand("isolate", "Pair the nodes, re-pair the failures and name the bad node or link; exit 0 healthy, 1 unhealthy");
    app_->add_option("-p,--profile", profile_name_, "Profile whose allreduce_busbw and link_bandwidth floors apply (name or YAML file)");
    app_->add_option("--bytes", bytes_text_, "Allreduce size per test")->capture_default_str();
    app_->add_option("--iterations", settings_.allreduce.iterations, "Timed allreduces per test")->capture_default_str();
    app_->add_option("--warmup", settings_.allreduce.warmup, "Untimed allreduces first")->capture_default_str();
    app_->add_option("--stream-bytes", stream_bytes_text_, "Message size of the bidirectional stream")->capture_default_str();
    app_->add_option("--window", settings_.stream.window, "Stream messages in flight each way")->capture_default_str();
    app_->add_option("--stream-iterations", settings_.stream.iterations, "Stream windows per test")->capture_default_str();
    tools::seconds_option(app_->add_option("--round-timeout", settings_.round_timeout_s, "Seconds a round's tests may take")->capture_default_str(), true);
    app_->add_option("--mad-k", settings_.limits.mad_k, "Fail a node more than K median absolute deviations below the fleet median")->capture_default_str();
    app_->add_option("--mad-floor", settings_.limits.mad_floor, "The MAD counts as at least this fraction of the median")->capture_default_str();
    app_->add_option("--min-drop", settings_.limits.min_drop, "... and fail it only when also this fraction of the median below it")->capture_default_str();
    app_->add_option("--min-busbw", min_busbw_, "Allreduce bus bandwidth floor, GB/s (default: the profile's allreduce_busbw floor)");
    app_->add_option("--model", model_path_, "smddp-model file whose allreduce prediction for each pair test's shape is the busbw floor (replaces the profile's)");
    app_->add_option("--model-tolerance", model_tolerance_pct_, "With --model: fail below the prediction by more than PCT percent")->capture_default_str();
    app_->add_option("--min-stream", min_stream_, "Bidirectional stream floor, GB/s (default: the profile's link_bandwidth floor)");
    app_->add_option("--retries", settings_.limits.retries, "Re-measurements of each suspect node, link or bisected group; a majority failing names it")->capture_default_str();
    app_->add_option("--bisect-min-nodes", settings_.limits.bisect_min_nodes, "Bisect allreduce groups from this many nodes up")->capture_default_str();
    app_->add_option("--topology", topology_path_, "Pair inside and across racks by FILE: aws ec2 describe-instance-topology JSON, or lines HOST LABEL... (network nodes, top layer first; default SMDDP_ISOLATE_TOPOLOGY)");
    app_->add_option("--seed", seed_, "Seed of the pairings (and of --simulate's fabric)")->capture_default_str();
    app_->add_option("--simulate", simulate_nodes_, "Run over a simulated fabric of N nodes instead of under mpirun (docs/diag.md#simulation)");
    app_->add_option("--faults", faults_text_, "With --simulate: faults to inject, KIND=COUNT[@FACTOR],... (slow-node, slow-link, stall, flap, corrupt)");
    app_->add_option("--racks", sim_racks_, "With --simulate: split the nodes into R racks (instead of --topology)");
    app_->add_option("--noise", noise_path_, "With --simulate: measured noise samples, lines BUSBW_RATIO STREAM_RATIO (default: built in)");
    app_->add_option("--schedule", schedule_, "With --simulate: isolate, or chs (the cluster-health-scanner comparison)")->capture_default_str();
    app_->add_option("--json", json_path_, "Write the JSON report to FILE ('-': stdout instead of the lines)");
    app_->add_option("--prom-textfile", textfile_, "Write each node's result for node_exporter's textfile collector (*.prom)");
    app_->add_flag("--print-drain", print_drain_, "Print the Slurm drain command for each unhealthy node");
    app_->add_flag("--drain", drain_, "Run those drain commands (scontrol) from rank 0");
  }

  CLI::App* app() const override { return app_; }

  void validate() override {
    settings_.allreduce.bytes = common::parse_size_or_throw(bytes_text_, "--bytes");
    settings_.stream.bytes = common::parse_size_or_throw(stream_bytes_text_, "--stream-bytes");
    if (settings_.allreduce.bytes < 4 || settings_.stream.bytes < 4) throw UsageError("--bytes and --stream-bytes must be at least 4");
    // Every rank holds these buffers: bounded like the preflight checks' (docs/diag.md#checks).
    if (settings_.allreduce.bytes > kMaxAllreduceBytes) {
      throw UsageError("--bytes '" + bytes_text_ + "': more than " + format_bytes(kMaxAllreduceBytes));
    }
    if (settings_.stream.bytes > kMaxLinkMessageBytes) {
      throw UsageError("--stream-bytes '" + stream_bytes_text_ + "': more than " + format_bytes(kMaxLinkMessageBytes));
    }
    if (settings_.allreduce.iterations < 1 || settings_.allreduce.warmup < 0) throw UsageError("--iterations must be >= 1 and --warmup >= 0");
    if (settings_.stream.window < 1 || settings_.stream.iterations < 1) throw UsageError("--window and --stream-iterations must be >= 1");
    if (settings_.stream.window > 128) throw UsageError("--window must be 1..128");
    if (!(settings_.round_timeout_s > 0)) throw UsageError("--round-timeout must be positive");
    if (!(settings_.limits.mad_k > 0) || settings_.limits.mad_floor < 0) throw UsageError("--mad-k must be positive and --mad-floor >= 0");
    if (!(settings_.limits.min_drop >= 0 && settings_.limits.min_drop < 1)) throw UsageError("--min-drop must be a fraction in [0, 1)");
    if (settings_.limits.retries < 0 || settings_.limits.bisect_min_nodes < 2) throw UsageError("--retries must be >= 0 and --bisect-min-nodes >= 2");
    if (min_busbw_ && *min_busbw_ < 0) throw UsageError("--min-busbw must not be negative");
    if (min_stream_ && *min_stream_ < 0) throw UsageError("--min-stream must not be negative");
    if (!profile_name_.empty()) {
      Profile p = load_profile(profile_name_);
      profile_label_ = p.name;
      for (const auto& c : p.checks) {
        if (c.spec->name == "allreduce_busbw") settings_.limits.min_busbw_gbs = c.params.number("min_gbytes_per_s");
        if (c.spec->name == "link_bandwidth") settings_.limits.min_stream_gbs = c.params.number("min_gbytes_per_s");
      }
    }
    if (min_busbw_) settings_.limits.min_busbw_gbs = *min_busbw_;
    if (min_stream_) settings_.limits.min_stream_gbs = *min_stream_;
    if (!model_path_.empty() || app_->count("--model-tolerance")) {
      if (min_busbw_) throw UsageError("--model and --min-busbw both set the allreduce floor: give one");
      model_ = load_model_option(model_path_, model_tolerance_pct_);
      // The shape the launcher announces (1 rank per node when it says
      // none); run() checks again with the job's real shape.
      model_allreduce_floor(*model_, kProbeAlgorithm, 2, launcher_ranks_per_node().value_or(1), settings_.allreduce.bytes);
    }
    root_ = SystemRoot::from_option(global_.sysfs_root);
    tools::check_writable(json_path_ == "-" ? "" : json_path_, "--json");
    tools::check_writable(textfile_, "--prom-textfile");
    if (!topology_path_.empty()) {
      topology_ = load_topology(topology_path_, "--topology " + topology_path_);
    } else if (std::string env = config::text("SMDDP_ISOLATE_TOPOLOGY"); !env.empty()) {
      topology_ = load_topology(env, "SMDDP_ISOLATE_TOPOLOGY " + env);
    }
    if (simulate_nodes_) {
      validate_simulation();
      return;
    }
    for (const char* o : {"--faults", "--racks", "--noise", "--schedule"}) {
      if (app_->count(o)) throw UsageError(std::string(o) + " is for --simulate");
    }
    settings_.allreduce.flip_sent_bit = Faults::from_env().corrupt;
    if (!launched_by_mpi()) throw UsageError("isolate tests nodes against each other: run it under mpirun or srun, one or more ranks per node");
  }

  int run() override {
    if (simulate_nodes_) return run_simulation();
    MpiSession mpi;
    Job job = make_job(topology_ ? ec2_instance_id(root_.path("/sys/devices/virtual/dmi/id/board_asset_tag")) : "");
    // Every rank places the same nodes alike; rank 0 alone names a host
    // the file lacks, before any test runs.
    std::vector<int> racks;
    if (topology_) {
      std::vector<std::vector<std::string>> layers;
      for (size_t n = 0; n < job.labels.size(); ++n) {
        auto p = placement_of(*topology_, job.labels[n], job.instance_ids[n]);
        if (!p) {
          if (job.rank != 0) {
            config::yield_to_reporting_rank();
            return tools::kExitUsage;
          }
          throw UsageError(fmt::format("--topology {}: no entry for host {}{}", topology_path_, job.labels[n],
                                       job.instance_ids[n].empty() ? "" : " nor its instance " + job.instance_ids[n]));
        }
        layers.push_back(std::move(*p));
      }
      racks = rack_ids(layers);
    }
    if (model_) {
      // Every rank computes the same floor from the same job; rank 0 alone
      // says why the model cannot predict it, before any test runs.
      try {
        const ModelFloor f = model_allreduce_floor(*model_, kProbeAlgorithm, 2, static_cast<int>(job.ranks_of.front().size()),
                                                   settings_.allreduce.bytes);
        settings_.limits.min_busbw_gbs = f.floor_gbs;
        settings_.limits.busbw_floor_by = f.by;
        // Bisection groups of N nodes: the same probe over N hosts.
        settings_.limits.group_busbw_floor = [this, per_node = static_cast<int>(job.ranks_of.front().size())](
                                                 int nodes) -> std::optional<std::pair<double, std::string>> {
          try {
            const ModelFloor g = model_allreduce_floor(*model_, kProbeAlgorithm, nodes, per_node, settings_.allreduce.bytes);
            return std::make_pair(g.floor_gbs, g.by);
          } catch (const UsageError&) {
            return std::nullopt;
          }
        };
      } catch (const UsageError&) {
        if (job.rank == 0) throw;
        config::yield_to_reporting_rank();
        return tools::kExitUsage;
      }
    }
    Outbox out;
    int code = tools::kExitOk;
    // Each node's first rank watches its fabric counters over the rounds.
    std::optional<CounterWatch> counters;
    if (job.local_index[static_cast<size_t>(job.rank)] == 0) counters.emplace(root_);
    if (job.rank == 0) {
      Isolation iso(job.labels, settings_.limits, racks, seed_);
      RootState st;
      std::cerr << fmt::format("smddp-diag isolate: {} nodes, {} ranks; rounds of at most {:.0f} s\n", job.labels.size(),
                               job.size, settings_.round_bound_s());
      while (root_round(job, settings_, iso, st, out)) {
      }
      const auto deltas = gather_counters(job, settings_, iso.rounds() + 1, counters, st, out);
      IsolateRun run = isolate_run(iso, job.labels, job.ranks_of, job.size, racks);
      run.counters = deltas;
      PreflightReport report = isolate_report(run);
      code = report.healthy() ? tools::kExitOk : tools::kExitFailed;
      for (int r = 1; r < job.size; ++r) {
        if (st.dead_ranks.count(r)) continue;
        nlohmann::json done = {{"done", true}, {"exit", code}, {"timestamp_ms", report.timestamp_ms}};
        const int n = job.node_of[static_cast<size_t>(r)];
        if (job.ranks_of[static_cast<size_t>(n)].front() == r) done["node"] = to_json(report.nodes[static_cast<size_t>(n)]);
        out.post(job.comm, r, tag(iso.rounds() + 2, 0), done.dump());
      }
      if (!textfile_.empty()) tools::write_atomically(textfile_, preflight_textfile(report.nodes.front(), report.timestamp_ms));
      write_outputs(report, isolate_json(report, run));
      if (st.unclean) {
        std::cerr << "smddp-diag isolate: ranks were lost or left requests in flight; ending the job\n";
        std::cout.flush();
        std::cerr.flush();
        sleep(1);  // the final messages reach the ranks that still answer
        mpi.abort(code);
      }
      return code;
    }
    // Other ranks: plans until "done"; the wait for one spans rank 0's longest round.
    for (int round = 1; round <= kMaxRounds + 2; ++round) {
      auto got = recv_until(job.comm, 0, tag(round, 0), deadline_in(2 * settings_.round_bound_s() + 10));
      if (!got) {
        std::cerr << fmt::format("smddp-diag isolate: {}: no word from {} within {:.0f} s; ending the job\n", job.who(job.rank),
                                 job.who(0), 2 * settings_.round_bound_s() + 10);
        mpi.abort(tools::kExitLost);
      }
      auto plan = nlohmann::json::parse(*got);
      if (plan.value("done", false)) {
        code = plan["exit"].get<int>();
        if (plan.contains("node") && !textfile_.empty()) {
          tools::write_atomically(textfile_, preflight_textfile(node_report_from_json(plan["node"]), plan["timestamp_ms"].get<int64_t>()));
        }
        break;
      }
      if (plan.contains("idle")) continue;
      if (plan.value("counters", false)) {
        if (counters) {
          const auto d = counters->deltas();
          send_until(job.comm, 0, tag(round, 1), d ? to_json(*d).dump() : "null", deadline_in(settings_.margin_s()));
        }
        continue;
      }
      send_until(job.comm, 0, tag(round, 1), run_part(job, plan, settings_, round).dump(),
                 deadline_in(settings_.round_bound_s()));
    }
    MPI_Comm_free(&job.comm);
    return code;
  }

 private:
  IsolateRun isolate_run(const RoundSchedule& schedule, std::vector<std::string> labels, std::vector<std::vector<int>> ranks_of,
                         int ranks, const std::vector<int>& racks) const {
    IsolateRun run;
    run.schedule = &schedule;
    run.labels = std::move(labels);
    run.ranks_of = std::move(ranks_of);
    run.ranks = ranks;
    run.profile = profile_label_;
    run.round_bound_s = settings_.round_bound_s();
    run.limits = settings_.limits;
    run.seed = seed_;
    run.racks = racks.empty() ? 1 : *std::max_element(racks.begin(), racks.end()) + 1;
    return run;
  }

  void validate_simulation() {
    for (const char* o : {"--model", "--model-tolerance", "--drain", "--prom-textfile"}) {
      if (app_->count(o)) throw UsageError(std::string(o) + " does not go with --simulate (no real hosts)");
    }
    if (*simulate_nodes_ < 2 || *simulate_nodes_ > kMaxSimNodes) {
      throw UsageError(fmt::format("--simulate {}: expected 2 to {} nodes", *simulate_nodes_, kMaxSimNodes));
    }
    if (app_->count("--racks") && (sim_racks_ < 1 || sim_racks_ > *simulate_nodes_)) {
      throw UsageError(fmt::format("--racks {}: expected 1 to the {} nodes", sim_racks_, *simulate_nodes_));
    }
    if (app_->count("--racks") && topology_) throw UsageError("--racks and --topology both place the nodes: give one");
    if (schedule_ != "isolate" && schedule_ != "chs") throw UsageError("--schedule '" + schedule_ + "': expected isolate or chs");
    sim_.nodes = *simulate_nodes_;
    sim_.seed = seed_;
    sim_.faults = parse_fault_spec(faults_text_);
    sim_.racks = sim_racks_;
    sim_.topology = topology_;
    sim_.noise = noise_path_.empty() ? builtin_noise() : load_noise(noise_path_);
    sim_.chs = schedule_ == "chs";
  }

  int run_simulation() {
    sim_.limits = settings_.limits;
    sim_.round_bound_s = settings_.round_bound_s();
    // The probes' bytes at the nominal rates: the pair ring moves its
    // buffer once per rank (2(k-1)/k = 1), the stream both ways.
    sim_.allreduce_seconds = static_cast<double>(settings_.allreduce.warmup + settings_.allreduce.iterations) *
                             static_cast<double>(settings_.allreduce.bytes) / (kSimBusbwGbs * 1e9);
    sim_.stream_seconds = static_cast<double>(settings_.stream.iterations) * settings_.stream.window *
                          static_cast<double>(settings_.stream.bytes) * 2 / (kSimStreamGbs * 1e9);
    // Faults the fabric cannot hold are usage errors, thrown before any round.
    SimRun sim = simulate(sim_);
    std::vector<std::vector<int>> ranks_of;
    for (int n = 0; n < sim_.nodes; ++n) ranks_of.push_back({n});
    IsolateRun run = isolate_run(*sim.schedule, sim.labels, ranks_of, sim_.nodes, sim.racks);
    PreflightReport report = isolate_report(run);
    nlohmann::json doc = isolate_json(report, run);
    doc["simulation"] = simulation_json(sim, sim_);
    write_outputs(report, doc);
    if (json_path_ != "-") {
      std::cout << fmt::format("simulated: {} rounds, {} tests, {:.1f} s; injected: {}\n", sim.schedule->rounds(),
                               sim.schedule->tests().size(), sim.seconds, injected_text(sim));
    }
    return report.healthy() ? tools::kExitOk : tools::kExitFailed;
  }

  void write_outputs(const PreflightReport& report, const nlohmann::json& j) {
    if (json_path_ == "-") {
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << report_lines(report, false);
      if (!json_path_.empty()) tools::write_atomically(json_path_, j.dump(2) + "\n");
    }
    std::cout.flush();
    // With the JSON on stdout, drain lines go to stderr so stdout still parses.
    std::ostream& drain_out = json_path_ == "-" ? std::cerr : std::cout;
    for (const auto& d : drain_commands(report)) {
      if (print_drain_) drain_out << d.shell() << "\n";
      if (drain_) {
        std::string error;
        const int rc = run_drain(d, &error);
        if (rc != 0) std::cerr << "smddp-diag isolate: drain of " << d.host << " failed: " << (rc < 0 ? error : "scontrol exited with " + std::to_string(rc)) << "\n";
      }
    }
    drain_out.flush();
  }

  const GlobalOptions& global_;
  SystemRoot root_;
  CLI::App* app_ = nullptr;
  std::string profile_name_, profile_label_ = "isolate";
  std::string bytes_text_ = "16MiB", stream_bytes_text_ = "1MiB";
  std::optional<double> min_busbw_, min_stream_;
  // The pair allreduce probe is a flat ring over both nodes' ranks: the
  // model's "ring" schedule is the one it predicts with.
  static constexpr const char* kProbeAlgorithm = "ring";
  std::string model_path_;
  double model_tolerance_pct_ = 25;
  std::optional<results::ModelBaseline> model_;
  std::string json_path_, textfile_;
  bool print_drain_ = false, drain_ = false;
  std::string topology_path_;
  std::optional<TopologyMap> topology_;
  uint64_t seed_ = 1;
  // --simulate and its options.
  std::optional<int> simulate_nodes_;
  std::string faults_text_, noise_path_, schedule_ = "isolate";
  int sim_racks_ = 1;
  SimSettings sim_;
  Settings settings_;
};

}  // namespace

std::unique_ptr<Command> make_isolate_command(CLI::App& parent, const GlobalOptions& global) {
  return std::make_unique<IsolateCommand>(parent, global);
}

}  // namespace smddp::diag
