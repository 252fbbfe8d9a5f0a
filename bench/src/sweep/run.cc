#include "sweep/run.h"

#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>
#include <string>
#include <vector>

#include "cli/algorithm_list.h"
#include "cli/cli.h"
#include "cli/collective_spec.h"
#include "reporters/reporter.h"
#include "smddp/algorithms.h"
#include "smddp/communicator.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "smddp/reduce.h"
#include "smddp/results/failure_codes.h"
#include "smddp/version.h"
#include "backends/device_memory.h"
#include "supervision/hang_report.h"
#include "backends/mpi_tuned.h"
#include "sweep/memory_fit.h"
#include "sweep/progress.h"
#include "sweep/row_judging.h"
#include "supervision/supervisor.h"
#include "sweep/sweep.h"
#include "sweep/system_info.h"
#include "supervision/watchdog.h"

extern char** environ;

namespace smddp::bench {
namespace {

std::map<std::string, std::string> captured_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    for (const char* prefix : {"SMDDP_", "NCCL_", "FI_", "OMPI_"}) {
      if (kv.rfind(prefix, 0) == 0) {
        auto eq = kv.find('=');
        env[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
      }
    }
  }
  return env;
}

std::string utc_now() {
  char buf[32];
  std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

void end_mpi() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
}

[[noreturn]] void abort_job(int code) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

// Usage errors found after the ranks connected are the same on every rank:
// rank 0 prints, everyone exits 64.
[[noreturn]] void usage_exit(int rank, const std::string& message) {
  if (rank == 0) std::fprintf(stderr, "smddp-bench: %s\n", message.c_str());
  end_mpi();
  if (rank != 0) config::yield_to_reporting_rank();
  std::exit(kExitUsage);
}

// -N 0 runs until SIGINT or SIGTERM: the signal only sets this flag; the
// ranks agree on it after each row and end the way a finished sweep does.
volatile std::sig_atomic_t g_stop_signal = 0;
void request_stop(int sig) { g_stop_signal = sig; }

int finish_exit_code(const Summary& s) {
  if (s.wrong || s.bitwise_differences) return kExitWrong;  // -B's differences fail as wrong values do
  if (s.below_threshold || !s.below_baseline.empty() || s.baseline_judged_nothing) return kExitBelowThreshold;
  return kExitOk;
}

}  // namespace

int parse_command_line(int argc, char** argv, BenchOptions& o) {
  CLI::App app{"smddp-bench: collective bandwidth and latency sweeps (nccl-tests flags)", "smddp-bench"};
  CliParts parts;
  add_bench_options(app, o, parts);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    throw UsageError(what + " (see --help)");
  }
  if (o.version) {
    std::printf("smddp-bench %s (reductions: %s)\n", kVersion, std::string(reduce_isa()).c_str());
    return kExitOk;
  }
  if (o.explain && !o.list_algorithms) throw UsageError("--explain goes with --list-algorithms");
  if (o.list_algorithms) {  // one backend's algorithms: smddp's registry, or what mpi:NAME forces
    if (parts.backend != "smddp" && parts.backend != "mpi") {
      throw UsageError("--list-algorithms lists --backend smddp (the default) or mpi, not '" + parts.backend + "'");
    }
    if (parts.backend == "mpi") {
      if (o.explain) throw UsageError("--explain is smddp's selection table; drop --backend mpi");
      print_mpi_algorithms();
      return kExitOk;
    }
    if (!o.explain) {
      print_algorithms();
      return kExitOk;
    }
  }
  if (o.list_config) {
    config::print(stdout, config::kEngine | config::kBench, o.markdown);
    std::fflush(stdout);
    config::check_or_exit("smddp-bench", config::kEngine | config::kBench);  // a bad value: its line, 64
    return kExitOk;
  }
  for (int i = 0; i < argc; ++i) o.argv.emplace_back(argv[i]);
  finish_options(o, parts);
  // --mem cuda, --backend nccl: a CUDA build and compatible backends. No CUDA
  // or NVML call here: this process becomes the supervising parent, and
  // CUDA initialised before fork() is unusable in the child (the device
  // probe runs in the rank process: check_cuda_device in run_benchmark).
  check_cuda_request(o);
  if (o.split && bootstrap_from_environment() == BootstrapKind::TcpStore) {
    throw UsageError(o.split->setting + ": split groups need mpirun or srun; this job was started torchrun-style "
                     "(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)");
  }
  for (const auto& b : o.backends) {
    if (is_mpi_backend(b) && bootstrap_from_environment() == BootstrapKind::TcpStore) {
      throw UsageError("--backend mpi needs mpirun; this job was started torchrun-style (RANK, WORLD_SIZE, "
                       "MASTER_ADDR, MASTER_PORT): use --backend smddp");
    }
  }
  return -1;
}

int run_benchmark(const BenchOptions& options) {
  Watchdog::catch_report_signal();
  BenchOptions o = options;  // -e may be lowered to what fits in memory
  // The rank process, before MPI or the TCP store: is there a usable device?
  try {
    check_cuda_device(o);
  } catch (const UsageError& e) {
    const char* launcher = launcher_rank();
    if (!launcher || std::atoi(launcher) == 0) {
      std::fprintf(stderr, "smddp-bench: %s\n", e.what());
    } else {
      config::yield_to_reporting_rank();
    }
    return kExitUsage;
  } catch (const Error& e) {
    std::fprintf(stderr, "smddp-bench: %s\n", e.what());  // a broken GPU node: every rank says so
    return kExitTimeout;
  }
  for (const auto& b : o.backends) {
    if (!mpi_tuned_name(b).empty()) request_mpi_tuned_rules();  // read once, in MPI_Init
  }
  std::unique_ptr<Communicator> comm;
  try {
    CommunicatorOptions copts;
    copts.timeout_seconds = o.timeout;
    copts.network_transport = o.transport;
    copts.fabric_provider = o.provider;
    comm = Communicator::create(copts);  // mpirun/srun: MPI; RANK/WORLD_SIZE/MASTER_*: TCP store
  } catch (const UsageError& e) {
    // Under mpirun the same on every rank (a setting, /dev/shm too small):
    // rank 0 says it. Started torchrun-style, each process reads its own
    // RANK, WORLD_SIZE and MASTER_* and says what is wrong with them.
    const char* launcher = launcher_rank();
    bool own = true;  // torchrun-style variables too malformed to tell: this process's own
    try {
      own = bootstrap_from_environment() == BootstrapKind::TcpStore;
    } catch (const UsageError&) {
    }
    usage_exit(own || !launcher || std::atoi(launcher) == 0 ? 0 : 1, e.what());
  } catch (const Error& e) {
    std::fprintf(stderr, "smddp-bench: cannot connect the ranks: %s\n", e.what());
    return kExitTimeout;
  }
  const int rank = comm->rank();
  const int nranks = comm->size();
  // Split groups: every rank's colour follows from the rule and its rank,
  // so every rank knows every group without asking.
  std::vector<int> colors;
  std::map<int, int> group_sizes;  // by colour
  if (o.split) {
    for (int r = 0; r < nranks; ++r) {
      colors.push_back(o.split->color(r));
      ++group_sizes[colors.back()];
    }
  }
  std::unique_ptr<Communicator> group_comm;  // this rank's group (split groups only)
  if (o.split) {
    try {
      group_comm = comm->split(colors[static_cast<size_t>(rank)], rank);
    } catch (const UsageError& e) {
      usage_exit(rank, e.what());
    } catch (const Error& e) {
      std::fprintf(stderr, "smddp-bench: cannot connect the ranks of split group %d: %s\n", colors[rank], e.what());
      abort_job(kExitTimeout);
    }
  }
  Communicator& group = group_comm ? *group_comm : *comm;
  const int group_ranks = group.size();
  if (o.list_algorithms) {  // --explain: the ranks connected, the table built (rank 0's group's)
    if (rank == 0) print_selection(group.selection());
    group_comm.reset();
    comm.reset();
    end_mpi();
    return kExitOk;
  }
  int smallest_group = group_ranks;  // the same on every rank
  for (const auto& [color, size] : group_sizes) smallest_group = std::min(smallest_group, size);
  if (!o.all_roots && (o.root < 0 || o.root >= smallest_group)) {
    usage_exit(rank, "-r/--root " + std::to_string(o.root) + " is not a rank of " +
                         (o.split ? "every split group (0.." : "this job (0..") + std::to_string(smallest_group - 1) + ")");
  }
  if (o.all_roots && smallest_group != group_ranks) {
    // Every group must run the same rows: -r -1 gives each group one per rank.
    usage_exit(rank, "-r/--root -1 with split groups of different sizes (" + std::to_string(smallest_group) + " and " +
                         std::to_string(std::max_element(group_sizes.begin(), group_sizes.end(), [](auto& a, auto& b) {
                                          return a.second < b.second;
                                        })->second) +
                         " ranks): every group must run the same rows; give a root");
  }
  SweepPlan plan;
  try {
    // An alltoallv pattern must fit every group's rank count, checked alike on every rank.
    for (const auto& [color, size] : group_sizes) check_alltoallv_ranks(o.alltoallv, size);
    check_alltoallv_ranks(o.alltoallv, group_ranks);
    // Its allreduce is the first collective: an algorithm forced through
    // SMDDP_ALGORITHM_* that cannot run on this job's ranks is refused here.
    fit_to_memory(o, *comm, group_ranks);
    plan = plan_sweep(o, group_ranks);
  } catch (const UsageError& e) {
    usage_exit(rank, e.what());
  }
  if (o.mem == MemoryKind::Cuda) {
    // GPUs belong to the host, not to the (possibly virtual, SMDDP_RANKS_PER_NODE)
    // node: count this rank among the processes on the same host.
    int host_rank = 0, host_ranks = 0;
    for (int r = 0; r < nranks; ++r) {
      if (comm->host(r) != comm->host(rank)) continue;
      if (r < rank) ++host_rank;
      ++host_ranks;
    }
    const std::string why =
        prepare_device(host_rank, host_ranks, static_cast<double>(plan.max_send_bytes + plan.max_recv_bytes));
    int32_t fail = why.empty() ? 0 : 1;
    comm->allreduce(&fail, &fail, 1, DataType::Int32, ReduceOp::Max);
    if (fail) usage_exit(rank, why.empty() ? "--mem cuda: another rank cannot use its device (see its host)" : why);
  }

  RunContext ctx;
  ctx.options = &o;
  ctx.nranks = nranks;
  ctx.groups = colors;
  ctx.environment = captured_environment();
  ctx.versions = {{"smddp", kVersion}, {"mpi", mpi_library_version()}, {"reductions", std::string(reduce_isa())}};
  ctx.started_utc = utc_now();
  ctx.planned_rows = plan.rows.size() * static_cast<size_t>(std::max(o.run_cycles, 1));

  int exit_code = kExitOk;
  bool sweeping = false;  // the result files begun: every rank is in the sweep
  Summary summary;
  std::vector<std::unique_ptr<Reporter>> reporters;
  try {
    ctx.nnodes = comm->num_nodes();
    ctx.transport = std::string(comm->network_transport());
    for (int r = 0; r < nranks; ++r) ctx.hosts.push_back(comm->host(r));
    ctx.nodes.resize(nranks);
    int32_t my_node = comm->node();
    comm->allgather(&my_node, ctx.nodes.data(), 1, DataType::Int32);
    ctx.pids.resize(nranks);
    int32_t my_pid = static_cast<int32_t>(getpid());
    comm->allgather(&my_pid, ctx.pids.data(), 1, DataType::Int32);
    if (o.roofline) ctx.memory_bandwidth_gbps = measure_memory_bandwidth(*comm);
    ProgressBoard::instance().attach(*comm);
    if (rank == 0) {
      // The watchdog ends a hung rank from its own thread (the main one is
      // stuck in the call): the result files get the hang report first.
      Watchdog::instance().on_timeout([&](const HangReport& hang) {
        Summary s = summary;
        char why[96];
        std::snprintf(why, sizeof why, "timed out after %.0f s (watchdog)", comm->timeout());
        s.error = why;
        s.exit_code = kExitTimeout;
        s.hang = hang;
        for (auto& rep : reporters) {
          try {
            rep->end(s);
          } catch (const std::exception&) {
          }
        }
      });
    }
    Watchdog::instance().start(comm->timeout(), rank, comm->host(rank));

    std::vector<std::unique_ptr<Backend>> backends;
    for (const auto& b : o.backends) {
      if (b == "smddp") backends.push_back(make_smddp_backend(group, o.algorithm));
#if SMDDP_CUDA_ENABLED
      else if (b == "nccl") backends.push_back(make_nccl_backend(group));
#endif
      else backends.push_back(make_mpi_backend(mpi_tuned_name(b), o.collectives, o.split ? colors[rank] : -1));
    }
    // Metrics settings are checked (and the port bound) on rank 0 before the
    // sweep; a usage error there ends every rank with 64.
    std::unique_ptr<Reporter> metrics;
    std::string metrics_error;
    if (rank == 0) {
      try {
        metrics = make_metrics_reporter(o.metrics, ctx);
      } catch (const UsageError& e) {
        metrics_error = e.what();
      }
    }
    int32_t metrics_failed = metrics_error.empty() ? 0 : 1;
    comm->broadcast(&metrics_failed, &metrics_failed, 1, DataType::Int32, 0);
    if (metrics_failed) usage_exit(rank, metrics_error);
    // The result files are begun (first written) on rank 0 before the table
    // and the sweep: one that cannot be (a FIFO no process reads) ends every
    // rank with 64 and one line, as the metrics settings do, instead of rank
    // 0 leaving while its peers wait in a collective.
    std::string files_error;
    if (rank == 0) {
      try {
        if (!o.json_path.empty()) reporters.push_back(make_json_reporter(o.json_path));
        if (!o.csv_path.empty()) reporters.push_back(make_csv_reporter(o.csv_path));
        for (auto& r : reporters) r->begin(ctx);
      } catch (const UsageError& e) {
        files_error = e.what();
      }
    }
    int32_t files_failed = files_error.empty() ? 0 : 1;
    comm->broadcast(&files_failed, &files_failed, 1, DataType::Int32, 0);
    if (files_failed) usage_exit(rank, files_error);
    if (rank == 0) {
      reporters.insert(reporters.begin(), make_table_reporter(o.quiet));
      reporters.front()->begin(ctx);
      if (metrics) {
        metrics->begin(ctx);
        reporters.push_back(std::move(metrics));
      }
    }
    sweeping = true;
    Progress progress(rank == 0 && (!o.quiet || o.progress), o.progress, ctx.planned_rows);
    BusbwAverages busbw;  // barrier rows are not counted (no bytes)
    size_t done = 0;
    Sweep sweep(o, ctx, *comm, group, std::move(backends));
    // -N: every cycle's rows are reported; -N 0 until a signal.
    if (o.run_cycles == 0) {
      std::signal(SIGINT, request_stop);
      std::signal(SIGTERM, request_stop);
    }
    bool stopped = false;
    const auto stop = [&] {
      if (o.run_cycles != 0) return false;
      int32_t requested = g_stop_signal != 0 ? 1 : 0;
      comm->allreduce(&requested, &requested, 1, DataType::Int32, ReduceOp::Max);
      stopped = requested != 0;
      return stopped;
    };
    std::vector<results::ResultRow> baseline_rows;
    for (int cycle = 0; !stopped && (o.run_cycles == 0 || cycle < o.run_cycles); ++cycle) {
      sweep.run(plan, [&](const std::vector<RowResult>& measured) {
        std::vector<RowResult> with_model;
        if (o.model) with_model = measured;
        const std::vector<RowResult>& results = o.model ? with_model : measured;
        for (auto& r : with_model) attach_model(r, *o.model, ctx, o.mem, summary);
        for (const auto& r : results) {
          summary.wrong += r.wrong;
          if (r.bitwise) summary.bitwise_differences += r.bitwise->differences();
          baseline_rows.push_back(result_row(r, ctx, o.mem));
          busbw.add(r);
        }
        progress.clear();
        for (auto& rep : reporters) rep->row(results);
        progress.update(++done);
      }, stop);
    }
    progress.clear();
    for (const auto& b : o.backends) {
      if (auto avg = busbw.average(b)) summary.avg_busbw_gbps[b] = *avg;
    }
    namespace code = results::code;
    // Each failure of a finished run names its code (docs/bench.md, JSON:
    // totals.verdicts; docs/diag.md, "Failure codes"): values first, as the
    // exit code ranks them.
    if (summary.wrong) {
      summary.verdicts.push_back({code::kBenchWrong, fmt::format("{} elements differ from the expected values (#wrong)",
                                                                 summary.wrong)});
    }
    if (summary.bitwise_differences) {
      summary.verdicts.push_back({code::kBenchBitwise, fmt::format("{} differences between repeats of identical inputs "
                                                                   "(-B; each row's bitwise names rank, element and bit)",
                                                                   summary.bitwise_differences)});
    }
    // --min-busbw holds for each collective's average (its footer's OK/FAILED).
    summary.threshold_gbps = o.min_busbw;
    for (Collective c : o.collectives) {
      auto avg = busbw.average(o.backends.front(), c);
      if (avg && below_min_busbw(*avg, o)) {
        summary.below_threshold = true;
        summary.verdicts.push_back({code::kBenchBelowThreshold,
                                    fmt::format("{} ({}): average bus bandwidth {:.3f} GB/s below --min-busbw {:.3f} GB/s",
                                                to_string(c), o.backends.front(), *avg, o.min_busbw)});
      }
    }
    if (!o.baseline_path.empty()) {
      // A model judges the rows it predicts; the others are named once, not failed.
      results::ModelGateResult model_gate;
      if (o.baseline_model) model_gate = results::gate_rows(*o.baseline_model, baseline_rows);
      const results::GateResult gate =
          o.baseline_model ? static_cast<results::GateResult>(model_gate) : results::gate_rows(o.baseline, baseline_rows);
      for (const auto& f : gate.failures) {
        summary.below_baseline.push_back(f.text);
        summary.verdicts.push_back({code::kBenchBelowBaseline, f.text});
      }
      // A gate that judged nothing did not pass: it fails as a row below it would.
      summary.baseline_judged_nothing = gate.judged == 0;
      const std::string nothing_judged =
          fmt::format("--baseline {}: no row was judged ({})", o.baseline_path,
                      o.baseline_model ? "the model predicts none of them" : "no entry matches a row with a bus bandwidth");
      if (summary.baseline_judged_nothing) summary.verdicts.push_back({code::kBenchNotJudged, nothing_judged});
      if (rank == 0) {
        // A failing line leads with its code, as a Slurm drain reason does (smddp:CODE).
        for (const auto& f : gate.failures) {
          std::fprintf(stderr, "smddp-bench: %s below the baseline: %s\n", code::kBenchBelowBaseline.data(), f.text.c_str());
        }
        for (const auto& u : model_gate.unpredicted) std::fprintf(stderr, "smddp-bench: not judged (no prediction): %s\n", u.c_str());
        std::fprintf(stderr, "smddp-bench: --baseline %s: %zu of %zu rows judged, %zu below\n", o.baseline_path.c_str(),
                     static_cast<size_t>(gate.judged), baseline_rows.size(), gate.failures.size());
        if (summary.baseline_judged_nothing) {
          std::fprintf(stderr, "smddp-bench: %s %s: the gate fails\n", code::kBenchNotJudged.data(), nothing_judged.c_str());
        }
        std::fflush(stderr);
      }
    }
    summary.complete = true;
    exit_code = finish_exit_code(summary);
    summary.exit_code = exit_code;
    for (auto& rep : reporters) rep->end(summary);
    Watchdog::instance().stop();
  } catch (const UsageError& e) {
    // During the sweep only rank 0's result files raise one (a FIFO whose
    // reader went away): its peers may wait in a collective, so the job ends.
    if (sweeping) {
      std::fprintf(stderr, "smddp-bench: %s\n", e.what());
      std::fflush(stderr);
      abort_job(kExitUsage);
    }
    usage_exit(rank, e.what());
  } catch (const Error& e) {
    exit_code = tools::exit_code_for(e);  // 3 timeout/lost/transport, else 70, as in smddp-diag
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    std::fprintf(stderr, "smddp-bench: rank %d on %s: %s\n", rank, host, e.what());
    std::fflush(stderr);
    summary.error = e.what();
    summary.exit_code = exit_code;
    const bool timed_out = dynamic_cast<const TimeoutError*>(&e) != nullptr;
    if (timed_out) {
      summary.timed_out_collective = e.collective();
      // Our record stays "in the call": the others' reports must see us waiting.
      Watchdog::instance().stop();
      ProgressBoard& board = ProgressBoard::instance();
      if (board.reports()) {
        HangReport hang = board.read("timeout");
        print_hang_report(hang);
        if (rank == 0) summary.hang = std::move(hang);
      }
    }
    for (auto& rep : reporters) {
      try {
        rep->end(summary);
      } catch (const std::exception&) {
      }
    }
    if (timed_out) ProgressBoard::instance().let_rank0_report();
    // Peers may be stuck in a collective: end the whole job with our code.
    abort_job(exit_code);
  } catch (const std::bad_alloc&) {
    // One line, not libstdc++'s "std::bad_alloc"; the buffers were sized to
    // fit, so something else took the memory.
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    std::fprintf(stderr, "smddp-bench: rank %d on %s: out of host memory; lower -e/--maxbytes, -n/--iters or "
                 "SMDDP_BENCH_MEMORY\n", rank, host);
    abort_job(kExitRuntime);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "smddp-bench: rank %d: %s\n", rank, e.what());
    abort_job(kExitRuntime);
  }
  group_comm.reset();
  comm.reset();
  end_mpi();
  return exit_code;
}

}  // namespace smddp::bench
