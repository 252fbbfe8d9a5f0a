#include "preflight/runner.h"

#include <chrono>
#include <fmt/format.h>
#include <set>
#include <type_traits>
#include <variant>

#include "smddp/tools/exit_codes.h"
#include "shared/model_floor.h"
#include "smddp/error.h"
#include "shared/mpi_util.h"
#include "shared/slurm.h"
#include "shared/text.h"
#include "preflight/consistency_check.h"
#include "preflight/counter_check.h"
#include "smddp/communicator.h"
#include "smddp/config.h"
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

nlohmann::json param_json(const ParamValue& v) {
  return std::visit([](const auto& x) -> nlohmann::json {
    using X = std::decay_t<decltype(x)>;
    if constexpr (std::is_same_v<X, Unlimited>) {
      return "unlimited";
    } else {
      return x;
    }
  }, v);
}

// FNV-1a, 64 bits: equal setups give equal text, so any stable hash will do.
std::string fnv1a_hex(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

struct Agreement {
  bool ok = false;
  std::string message;                    // rank 0, when not ok
  int exit_code = 0;
  std::vector<std::string> slurm_nodes;   // per rank, when ok
};

// Every rank sends its fingerprint, host and Slurm node name to rank 0,
// which answers whether they all run the same thing. Point-to-point with a
// deadline: a rank that never arrives is named, nobody waits forever.
Agreement agree(MPI_Comm comm, int rank, int size, const PreflightSetup& s, double timeout_s) {
  const std::string host = hostname();
  nlohmann::json mine = {{"hash", setup_fingerprint(s)}, {"host", host}, {"slurm_node", slurm_node_name(host)},
                         {"profile", s.profile.name}, {"checks", s.profile.checks.size()}};
  auto got = gather_until(comm, 0, mine.dump(), kTagAgree, deadline_in(timeout_s));
  Agreement a;
  std::vector<std::string> verdicts(static_cast<size_t>(size));
  if (rank == 0) {
    std::vector<nlohmann::json> per(static_cast<size_t>(size));
    std::vector<std::string> missing, differ;
    for (int r = 0; r < size; ++r) {
      const auto& text = got[static_cast<size_t>(r)];
      if (!text) {
        missing.push_back(std::to_string(r));
        continue;
      }
      per[static_cast<size_t>(r)] = nlohmann::json::parse(*text);
      const auto& j = per[static_cast<size_t>(r)];
      if (j["hash"] != per[0]["hash"]) {
        differ.push_back(fmt::format("rank {} ({}: profile '{}', {} checks)", r, j["host"].get<std::string>(),
                                     j["profile"].get<std::string>(), j["checks"].get<size_t>()));
      }
    }
    nlohmann::json verdict;
    if (!missing.empty()) {
      a.exit_code = tools::kExitLost;
      a.message = fmt::format("smddp-diag preflight: rank(s) {} did not check in within {} s (SMDDP_TIMEOUT); ending the job",
                              join(missing, ", "), timeout_s);
    } else if (!differ.empty()) {
      // One line even for a large job: the first few ranks, the rest counted.
      constexpr size_t kNamed = 4;
      if (differ.size() > kNamed) {
        const size_t more = differ.size() - kNamed;
        differ.resize(kNamed);
        differ.push_back(fmt::format("{} more rank(s)", more));
      }
      a.exit_code = tools::kExitUsage;
      a.message = fmt::format("smddp-diag preflight: the ranks disagree on the profile or check list: rank 0 ({}: profile '{}', {} checks) "
                              "differs from {}; give every rank the same --profile, --checks and --skip",
                              per[0]["host"].get<std::string>(), per[0]["profile"].get<std::string>(), per[0]["checks"].get<size_t>(),
                              join(differ, ", "));
    } else {
      a.ok = true;
      for (const auto& j : per) a.slurm_nodes.push_back(j["slurm_node"].get<std::string>());
    }
    verdict = {{"exit", a.exit_code}, {"slurm_nodes", a.slurm_nodes}};
    for (auto& v : verdicts) v = verdict.dump();
  }
  auto reply = scatter_until(comm, 0, verdicts, kTagAgreed, deadline_in(timeout_s));
  if (rank == 0) return a;
  if (!reply) {
    a.exit_code = tools::kExitLost;
    return a;
  }
  auto j = nlohmann::json::parse(*reply);
  a.exit_code = j["exit"].get<int>();
  a.ok = a.exit_code == 0;
  a.slurm_nodes = j["slurm_nodes"].get<std::vector<std::string>>();
  return a;
}

}  // namespace

std::string setup_fingerprint(const PreflightSetup& s) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : s.profile.checks) {
    nlohmann::json params = nlohmann::json::object();
    for (const auto& [k, v] : c.params.values()) params[k] = param_json(v);
    checks.push_back({{"check", c.spec->name}, {"params", params}});
  }
  nlohmann::json j = {{"profile", s.profile.name}, {"checks", checks}, {"only", s.only}, {"skip", s.skip}};
  // --model judges allreduce_busbw: ranks with other models would disagree on the shape's verdict.
  if (s.model) j["model"] = {{"tolerance", s.model->tolerance}, {"parameters", model::to_json(s.model->model)}};
  return fnv1a_hex(j.dump());
}

PreflightReport run_preflight_alone(const PreflightSetup& s) {
  PreflightReport report = empty_report(s, 1);
  NodeReport node;
  node.host = node.label = hostname();
  node.slurm_node = slurm_node_name(node.host);
  node.ranks = {0};
  std::map<std::string, CheckResult> cluster;
  for (const auto& c : s.profile.checks) {
    if (c.spec->name == "consistency") {
      // Alone, this node against --golden and the settings advice.
      FactSources base;
      base.root = s.root;
      base.nvml_library = s.nvml_library;
      try {
        cluster["consistency"] = consistency_alone(base, s.faults, s.golden ? &*s.golden : nullptr, c.params);
      } catch (const std::exception& e) {
        cluster["consistency"] = CheckResult::fail("consistency", std::string("check failed to run: ") + e.what());
      }
    } else if (c.spec->scope == CheckScope::Cluster) {
      cluster[std::string(c.spec->name)] = CheckResult::skip(std::string(c.spec->name), "single process: run under mpirun to check across ranks");
    }
  }
  const CounterWatch counters(s.root);
  std::vector<CheckResult> local = run_node_checks(s);
  if (auto d = counters.deltas()) local.push_back(counter_result(*d, "the checks"));
  node.checks = merge(s.profile, local, cluster);
  add_counter_result(node.checks, local);
  report.nodes.push_back(std::move(node));
  return report;
}

// The --model floor of allreduce_busbw for this job: hosts = nodes, the
// same ranks on each; UsageError when the model cannot predict it.
static double set_model_floor(const PreflightSetup& s, const ClusterContext& ctx, std::string* by) {
  for (const auto& c : s.profile.checks) {
    if (c.spec->name != "allreduce_busbw") continue;
    const int nodes = ctx.num_nodes();
    if (ctx.size % nodes) {
      throw UsageError(fmt::format("--model '{}': {} ranks on {} nodes are uneven; the model needs the same count on every node",
                                   s.model->origin, ctx.size, nodes));
    }
    const ModelFloor f = model_allreduce_floor(*s.model, "auto", nodes, ctx.size / nodes, c.params.size("bytes").value_or(0));
    *by = f.by;
    return f.floor_gbs;
  }
  return 0;
}

PreflightOutcome run_preflight_mpi(const PreflightSetup& s) {
  PreflightOutcome outcome;
  ClusterContext ctx;
  MPI_Comm_dup(MPI_COMM_WORLD, &ctx.comm);
  MPI_Comm_set_errhandler(ctx.comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(ctx.comm, &ctx.rank);
  MPI_Comm_size(ctx.comm, &ctx.size);
  ctx.faults = s.faults;
  ctx.fact_sources.root = s.root;
  ctx.fact_sources.nvml_library = s.nvml_library;
  ctx.golden = s.golden ? &*s.golden : nullptr;
  outcome.root = ctx.rank == 0;
  // Before any collective: every rank runs the same checks, or none runs.
  const double timeout_s = config::seconds("SMDDP_TIMEOUT");
  Agreement agreed = agree(ctx.comm, ctx.rank, ctx.size, s, timeout_s);
  if (!agreed.ok) {
    outcome.ran = false;
    outcome.exit_code = agreed.exit_code;
    outcome.message = agreed.message;
    outcome.peers_missing = agreed.exit_code == tools::kExitLost;
    MPI_Comm_free(&ctx.comm);
    return outcome;
  }
  auto engine = Communicator::create_from_mpi();
  ctx.engine = engine.get();
  for (int r = 0; r < ctx.size; ++r) ctx.hosts.push_back(engine->host(r));
  ctx.node_of.resize(static_cast<size_t>(ctx.size));
  {
    // Node ids, bounded like every other exchange.
    auto ids = gather_until(ctx.comm, 0, std::to_string(engine->node()), kTagNodeIds, deadline_in(timeout_s));
    std::string all;
    if (ctx.rank == 0) {
      std::vector<std::string> parts;
      for (const auto& id : ids) parts.push_back(id.value_or("-1"));
      all = join(parts, ",");
    }
    auto got = scatter_until(ctx.comm, 0, std::vector<std::string>(static_cast<size_t>(ctx.size), all), kTagNodeIdList,
                             deadline_in(timeout_s));
    std::vector<std::string> parts = got ? split(*got, ',') : std::vector<std::string>{};
    if (parts.size() != static_cast<size_t>(ctx.size) || std::find(parts.begin(), parts.end(), "-1") != parts.end()) {
      outcome.ran = false;
      outcome.exit_code = tools::kExitLost;
      outcome.peers_missing = true;
      if (ctx.rank == 0) outcome.message = fmt::format("smddp-diag preflight: not every rank gave its node within {} s; ending the job", timeout_s);
      return outcome;
    }
    for (int r = 0; r < ctx.size; ++r) ctx.node_of[static_cast<size_t>(r)] = static_cast<int>(*parse_int(parts[static_cast<size_t>(r)]));
  }
  ctx.leaders.assign(static_cast<size_t>(engine->num_nodes()), -1);
  for (int r = ctx.size - 1; r >= 0; --r) ctx.leaders[static_cast<size_t>(ctx.node_of[static_cast<size_t>(r)])] = r;
  std::map<std::string, int> host_nodes;
  for (int n = 0; n < ctx.num_nodes(); ++n) ++host_nodes[ctx.hosts[static_cast<size_t>(ctx.leaders[static_cast<size_t>(n)])]];
  for (int n = 0; n < ctx.num_nodes(); ++n) {
    const std::string& host = ctx.hosts[static_cast<size_t>(ctx.leaders[static_cast<size_t>(n)])];
    ctx.labels.push_back(host_nodes[host] > 1 ? fmt::format("{}#{}", host, n) : host);
  }
  if (s.model) {
    // Every rank derives the same floor from the same job, or the same
    // reason the model cannot give one: then no check runs, exit 64.
    try {
      ctx.model_floor_gbs = set_model_floor(s, ctx, &ctx.model_floor_by);
    } catch (const UsageError& e) {
      outcome.ran = false;
      outcome.exit_code = tools::kExitUsage;
      if (ctx.rank == 0) outcome.message = std::string("smddp-diag: ") + e.what();
      return outcome;
    }
  }

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
    // One rank: clock_skew says so itself; consistency still checks --golden.
    if (ctx.size < 2 && name != "clock_skew" && name != "consistency") {
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
    if (auto d = counters->deltas()) node_results.push_back(counter_result(*d, "the checks"));
  }
  // Rank 0 gathers every node's results.
  nlohmann::json mine = nlohmann::json::array();
  for (const auto& r : node_results) mine.push_back(to_json(r));
  const double gather_s = std::min(120.0, timeout_s);
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
      node.slurm_node = agreed.slurm_nodes.at(static_cast<size_t>(leader));
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
