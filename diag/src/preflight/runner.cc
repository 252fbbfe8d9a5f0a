#include "preflight/runner.h"

#include <chrono>
#include <fmt/format.h>
#include <set>

#include "smddp/tools/exit_codes.h"
#include "common/mpi_util.h"
#include "preflight/counter_check.h"
#include "smddp/communicator.h"
#include "smddp/version.h"

namespace smddp::diag {
namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

NodeContext make_node_context(const PreflightSetup& s) {
  NodeContext ctx;
  ctx.root = s.root;
  bool gpu = false, efa = false;
  for (const auto& c : s.profile.checks) {
    gpu |= c.spec->name.starts_with("gpu_");
    efa |= c.spec->name == "efa_count";
  }
  if (gpu) ctx.nvml = take_nvml_snapshot(s.nvml_library);
  if (efa) ctx.rdma = discover_rdma(s.root, false);
  return ctx;
}

std::vector<CheckResult> run_node_checks(const PreflightSetup& s) {
  NodeContext ctx = make_node_context(s);
  std::vector<CheckResult> out;
  for (const auto& c : s.profile.checks) {
    if (c.spec->scope != CheckScope::Node) continue;
    try {
      out.push_back(c.spec->node(ctx, c.params));
    } catch (const std::exception& e) {
      out.push_back(CheckResult::fail(std::string(c.spec->name), std::string("check failed to run: ") + e.what()));
    }
  }
  return out;
}

PreflightReport empty_report(const PreflightSetup& s, int ranks) {
  PreflightReport r;
  r.profile = s.profile.name;
  r.version = kVersion;
  r.timestamp_ms = now_ms();
  r.ranks = ranks;
  return r;
}

// Node and cluster results in profile order.
std::vector<CheckResult> merge(const Profile& profile, const std::vector<CheckResult>& node_results,
                               const std::map<std::string, CheckResult>& cluster_results) {
  std::vector<CheckResult> out;
  for (const auto& c : profile.checks) {
    const std::string name(c.spec->name);
    if (c.spec->scope == CheckScope::Node) {
      for (const auto& r : node_results) {
        if (r.check == name) out.push_back(r);
      }
    } else if (auto it = cluster_results.find(name); it != cluster_results.end()) {
      out.push_back(it->second);
    }
  }
  return out;
}

}  // namespace

PreflightReport run_preflight_alone(const PreflightSetup& s) {
  PreflightReport report = empty_report(s, 1);
  NodeReport node;
  node.host = node.label = hostname();
  node.ranks = {0};
  std::map<std::string, CheckResult> cluster;
  for (const auto& c : s.profile.checks) {
    if (c.spec->scope == CheckScope::Cluster) {
      cluster[std::string(c.spec->name)] = CheckResult::skip(std::string(c.spec->name), "single process: run under mpirun to check across ranks");
    }
  }
  const CounterWatch counters(s.root);
  std::vector<CheckResult> local = run_node_checks(s);
  if (auto moved = counters.result()) local.push_back(std::move(*moved));
  node.checks = merge(s.profile, local, cluster);
  add_counter_result(node.checks, local);
  report.nodes.push_back(std::move(node));
  return report;
}

PreflightOutcome run_preflight_mpi(const PreflightSetup& s) {
  PreflightOutcome outcome;
  ClusterContext ctx;
  MPI_Comm_dup(MPI_COMM_WORLD, &ctx.comm);
  MPI_Comm_set_errhandler(ctx.comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(ctx.comm, &ctx.rank);
  MPI_Comm_size(ctx.comm, &ctx.size);
  ctx.faults = s.faults;
  auto engine = Communicator::create_from_mpi();
  ctx.engine = engine.get();
  for (int r = 0; r < ctx.size; ++r) ctx.hosts.push_back(engine->host(r));
  ctx.node_of.resize(static_cast<size_t>(ctx.size));
  int my_node = engine->node();
  MPI_Allgather(&my_node, 1, MPI_INT, ctx.node_of.data(), 1, MPI_INT, ctx.comm);
  ctx.leaders.assign(static_cast<size_t>(engine->num_nodes()), -1);
  for (int r = ctx.size - 1; r >= 0; --r) ctx.leaders[static_cast<size_t>(ctx.node_of[static_cast<size_t>(r)])] = r;
  std::map<std::string, int> host_nodes;
  for (int n = 0; n < ctx.num_nodes(); ++n) ++host_nodes[ctx.hosts[static_cast<size_t>(ctx.leaders[static_cast<size_t>(n)])]];
  for (int n = 0; n < ctx.num_nodes(); ++n) {
    const std::string& host = ctx.hosts[static_cast<size_t>(ctx.leaders[static_cast<size_t>(n)])];
    ctx.labels.push_back(host_nodes[host] > 1 ? fmt::format("{}#{}", host, n) : host);
  }
  outcome.root = ctx.rank == 0;

  // Node checks, once per node.
  std::vector<CheckResult> node_results;
  std::optional<CounterWatch> counters;
  if (ctx.leader()) counters.emplace(s.root);
  if (ctx.leader()) node_results = run_node_checks(s);

  // Cluster checks, all ranks in step. A failed reachability check means some
  // rank may not take part: the ones after it are skipped on every rank.
  std::map<std::string, std::vector<CheckResult>> cluster;  // rank 0: per node
  std::string skip_reason;
  for (const auto& c : s.profile.checks) {
    if (c.spec->scope != CheckScope::Cluster) continue;
    const std::string name(c.spec->name);
    if (!skip_reason.empty()) {
      cluster[name] = std::vector<CheckResult>(static_cast<size_t>(ctx.num_nodes()), CheckResult::skip(name, skip_reason));
      continue;
    }
    if (ctx.size < 2 && name != "clock_skew") {
      cluster[name] = std::vector<CheckResult>(static_cast<size_t>(ctx.num_nodes()), CheckResult::skip(name, "one rank"));
      continue;
    }
    cluster[name] = c.spec->cluster(ctx, c.params);
    if (name == "rank_reachability") {
      std::string verdict;
      if (ctx.rank == 0) {
        for (const auto& r : cluster[name]) {
          if (r.status == CheckStatus::Fail) verdict = "skipped: rank_reachability failed";
        }
      }
      auto got = scatter_until(ctx.comm, 0, std::vector<std::string>(static_cast<size_t>(ctx.size), verdict), kTagDecision,
                               deadline_in(c.params.number("timeout_s") + 30));
      skip_reason = got ? *got : "skipped: no word from rank 0";
    }
  }

  if (counters) {
    if (auto moved = counters->result()) node_results.push_back(std::move(*moved));
  }
  // Rank 0 gathers every node's results.
  nlohmann::json mine = nlohmann::json::array();
  for (const auto& r : node_results) mine.push_back(to_json(r));
  const double gather_s = 120;
  auto gathered = gather_until(ctx.comm, 0, ctx.leader() ? mine.dump() : "", kTagNodeResults, deadline_in(gather_s));
  std::vector<std::string> finals(static_cast<size_t>(ctx.size));
  if (ctx.rank == 0) {
    outcome.report = empty_report(s, ctx.size);
    for (int n = 0; n < ctx.num_nodes(); ++n) {
      const int leader = ctx.leaders[static_cast<size_t>(n)];
      NodeReport node;
      node.node = n;
      node.host = ctx.hosts[static_cast<size_t>(leader)];
      node.label = ctx.labels[static_cast<size_t>(n)];
      for (int r = 0; r < ctx.size; ++r) {
        if (ctx.node_of[static_cast<size_t>(r)] == n) node.ranks.push_back(r);
      }
      std::vector<CheckResult> local;
      if (const auto& text = gathered[static_cast<size_t>(leader)]) {
        for (const auto& j : nlohmann::json::parse(*text)) local.push_back(check_result_from_json(j));
      } else {
        outcome.peers_missing = true;
        for (const auto& c : s.profile.checks) {
          if (c.spec->scope == CheckScope::Node) {
            local.push_back(CheckResult::fail(std::string(c.spec->name), fmt::format("no result from {} within {} s", ctx.who(leader), gather_s)));
          }
        }
      }
      std::map<std::string, CheckResult> node_cluster;
      for (const auto& [name, results] : cluster) node_cluster[name] = results.at(static_cast<size_t>(n));
      node.checks = merge(s.profile, local, node_cluster);
      add_counter_result(node.checks, local);
      outcome.report.nodes.push_back(std::move(node));
    }
    for (int r = 0; r < ctx.size; ++r) {
      if (!gathered[static_cast<size_t>(r)]) outcome.peers_missing = true;
    }
    const int code = outcome.report.healthy() ? tools::kExitOk : tools::kExitFailed;
    for (int r = 0; r < ctx.size; ++r) {
      nlohmann::json f = {{"exit", code}, {"timestamp_ms", outcome.report.timestamp_ms}};
      const int n = ctx.node_of[static_cast<size_t>(r)];
      if (ctx.leaders[static_cast<size_t>(n)] == r) f["node"] = to_json(outcome.report.nodes[static_cast<size_t>(n)]);
      finals[static_cast<size_t>(r)] = f.dump();
    }
  }
  auto final_msg = scatter_until(ctx.comm, 0, finals, kTagFinal, deadline_in(gather_s + 30));
  if (!final_msg) {
    outcome.exit_code = tools::kExitFailed;
    outcome.peers_missing = true;
  } else {
    auto f = nlohmann::json::parse(*final_msg);
    outcome.exit_code = f["exit"].get<int>();
    if (f.contains("node")) {
      outcome.my_node = node_report_from_json(f["node"]);
      outcome.report.timestamp_ms = f["timestamp_ms"].get<int64_t>();
    }
  }
  engine.reset();
  MPI_Comm_free(&ctx.comm);
  return outcome;
}

}  // namespace smddp::diag
