// smddp-model tune: time a planned set of collectives with forced algorithms
// on the job's ranks, within a budget, and fit the model from those rows in
// memory (the same fit as `fit`, docs/model.md, "Tune").
#include "tune.h"

#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>

#include "fit.h"
#include "smddp/common/sizes.h"
#include "smddp/communicator.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "smddp/schedule.h"
#include "smddp/tools/atomic_file.h"
#include "smddp/tools/exit_codes.h"
#include "smddp/tools/paths.h"
#include "verbs.h"

namespace smddp::model {
namespace tune {

std::vector<Pair> probe_pairs() {
  std::vector<Pair> out;
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter}) {
    for (const std::string& a : schedule::algorithms(c)) out.push_back({c, a});
  }
  return out;
}

std::vector<uint64_t> plan_sizes(double us_per_byte, double share_us, int calls_per_size, uint64_t max_bytes) {
  std::vector<uint64_t> sizes{kMinBytes};
  // Sizes grow by 4: all sizes up to S cost at most 4/3 of S's calls.
  const double cost_per_byte = std::max(us_per_byte, 1e-9) * std::max(calls_per_size, 1) * 4.0 / 3.0;
  const double largest = share_us / cost_per_byte;
  for (uint64_t s = kMinBytes * 4; s <= max_bytes && s <= (uint64_t{1} << 40); s *= 4) {
    if (static_cast<double>(s) > largest && sizes.size() >= 2) break;
    sizes.push_back(s);
  }
  return sizes;
}

int plan_iterations(double call_us, double remaining_us, int probes_left) {
  call_us = std::max(call_us, 1.0);
  const double share = remaining_us / std::max(probes_left, 1);
  int n = static_cast<int>(std::clamp(std::floor(share / call_us), double{kMinIterations}, double{kMaxIterations}));
  // Half a call of margin each: calls vary.
  const double fits = std::floor(remaining_us / (1.5 * call_us));
  n = static_cast<int>(std::min<double>(n, fits));
  return std::max(n, 0);
}

CallSize call_size(Collective c, uint64_t bytes, int nranks, size_t dtype_size) {
  CallSize out;
  const uint64_t n = static_cast<uint64_t>(std::max(nranks, 1));
  if (c == Collective::AllGather || c == Collective::ReduceScatter) {
    out.count = static_cast<size_t>(bytes / dtype_size / n);
    out.row_bytes = out.count * dtype_size * n;
  } else {
    out.count = static_cast<size_t>(bytes / dtype_size);
    out.row_bytes = out.count * dtype_size;
  }
  return out;
}

}  // namespace tune

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void end_mpi() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
}

// Found after the ranks connected, the same on every rank: rank 0 says it.
int usage_exit(int rank, const std::string& message) {
  if (rank == 0) std::fprintf(stderr, "smddp-model: %s\n", message.c_str());
  std::fflush(stderr);
  end_mpi();
  if (rank != 0) config::yield_to_reporting_rank();
  return tools::kExitUsage;
}

constexpr size_t kDtypeSize = 4;  // float

struct Prober {
  Communicator& comm;
  Clock::time_point start;
  double deadline_s;  // seconds after start when the last probe must end
  std::vector<float> send, recv;
  int calls = 0;
  bool stopped_early = false;

  // The maximum over ranks of each value (every rank gets the same figures,
  // so every rank takes the same decisions from them).
  std::vector<double> agree_max(std::vector<double> v) {
    std::vector<double> out(v.size());
    comm.allreduce(v.data(), out.data(), v.size(), DataType::Float64, ReduceOp::Max);
    return out;
  }

  // One call, from a barrier (the warm-up) or right after the previous
  // call (the timed iterations, back to back as smddp-bench times them, so
  // that the rows mean what fit's rows from smddp-bench mean).
  double time_call(const CollectiveArgs& a, const CallOptions& co, bool from_barrier = true) {
    if (from_barrier) comm.barrier();
    const auto t0 = Clock::now();
    comm.run(a, co);
    ++calls;
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  }

  CollectiveArgs args(Collective c, size_t count) {
    CollectiveArgs a;
    a.collective = c;
    a.send = send.data();
    a.recv = recv.data();
    a.count = count;
    a.dtype = DataType::Float32;
    a.op = ReduceOp::Sum;
    return a;
  }
};

}  // namespace

int run_tune(const TuneOptions& o) {
  const auto start = Clock::now();
  // The fit must not rest on the model it replaces, nor on a tuning file's
  // choices that the schedules it fits through do not know
  // (docs/model.md, "A known gap").
  ::unsetenv("SMDDP_TUNING_FILE");
  ::unsetenv("SMDDP_MODEL_FILE");
  config::check_or_exit("smddp-model", config::kEngine);

  std::unique_ptr<Communicator> comm;
  try {
    comm = Communicator::create();
  } catch (const UsageError& e) {
    const char* launcher = nullptr;
    for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
      if (!launcher) launcher = std::getenv(var);
    }
    return usage_exit(!launcher || std::atoi(launcher) == 0 ? 0 : 1, e.what());
  } catch (const Error& e) {
    std::fprintf(stderr, "smddp-model: cannot connect the ranks: %s\n", e.what());
    return tools::kExitLost;
  }
  const int rank = comm->rank();
  const int n = comm->size();
  Prober pr{*comm, start, 0, {}, {}, 0, false};

  // Before any work: rank 0's output file, every rank's node (the schedules
  // take host-major ranks, the same count on every node), and the bounds.
  std::string problem;
  if (rank == 0) {
    try {
      tools::check_writable(o.output, "-o");
    } catch (const UsageError& e) {
      problem = e.what();
    }
  }
  std::vector<double> node(static_cast<size_t>(n) + 1, 0);
  node[static_cast<size_t>(rank)] = comm->node();
  node[static_cast<size_t>(n)] = problem.empty() ? 0 : 1;
  node = pr.agree_max(node);
  if (node[static_cast<size_t>(n)] > 0) return usage_exit(rank, problem);
  if (n < 2) return usage_exit(rank, "tune: needs at least 2 ranks (run it under mpirun or srun, as the job will run)");
  const int hosts = comm->num_nodes();
  const int per_host = n / hosts;
  bool host_major = n % hosts == 0;
  std::map<double, int> seen;
  for (int r = 0; host_major && r < n; ++r) {
    const double id = node[static_cast<size_t>(r)];
    if (r % per_host == 0) {
      host_major = seen.emplace(id, r).second;  // a new node starts every K ranks
    } else {
      host_major = id == node[static_cast<size_t>(r - 1)];
    }
  }
  if (!host_major) {
    return usage_exit(rank, "tune: the model needs the same number of ranks on every node, placed node by node "
                            "(mpirun's default --map-by slot, srun's block distribution)");
  }
  schedule::Options options;
  options.shm_slot_bytes = config::bytes("SMDDP_SHM_SLOT_BYTES");
  options.cma = config::flag("SMDDP_CMA");
  {
    const auto cores = pr.agree_max({comm->placement().dedicated_cores ? 0.0 : 1.0});
    options.dedicated_cores = cores[0] == 0;
  }
  if (const std::string why = scale_problem(hosts, per_host, o.max_bytes, options); !why.empty()) {
    return usage_exit(rank, "tune: " + why);
  }

  // The deadline keeps a little of the budget for the fit and the write.
  const double reserve = std::clamp(0.1 * o.seconds, 0.5, 3.0);
  pr.deadline_s = o.seconds - reserve;
  const std::vector<tune::Pair> pairs = tune::probe_pairs();
  std::vector<Row> rows;
  std::vector<uint64_t> sizes;
  std::string transport(comm->network_transport());
  try {
    // A first measurement: the default allreduce at 1 MiB (after one at
    // 4 KiB to open the connections) gives the time per byte the sizes are
    // planned from.
    const uint64_t calib = std::min<uint64_t>(1 << 20, o.max_bytes);
    pr.send.assign(calib / kDtypeSize, 1.0f);
    pr.recv.assign(calib / kDtypeSize, 0.0f);
    pr.time_call(pr.args(Collective::AllReduce, tune::kMinBytes / kDtypeSize), {});
    const auto first = pr.agree_max({pr.time_call(pr.args(Collective::AllReduce, calib / kDtypeSize), {}),
                                     seconds_since(start)});
    const double left_us = (pr.deadline_s - first[1]) * 1e6;
    sizes = tune::plan_sizes(first[0] / static_cast<double>(calib), 0.6 * left_us,
                             static_cast<int>(pairs.size()) * (tune::kMinIterations + 2), o.max_bytes);
    size_t buffer = 0;
    for (uint64_t s : sizes) buffer = std::max<size_t>(buffer, s / kDtypeSize);
    pr.send.assign(buffer, 1.0f);
    pr.recv.assign(buffer, 0.0f);

    // Smallest sizes first, every pair at each: a budget spent early loses
    // the largest rows, never an algorithm.
    std::map<size_t, double> last_us;  // per pair: its last call, to estimate the next
    size_t probes_left = pairs.size() * sizes.size();
    for (size_t si = 0; si < sizes.size() && !pr.stopped_early; ++si) {
      for (size_t pi = 0; pi < pairs.size(); ++pi, --probes_left) {
        const tune::Pair& p = pairs[pi];
        const tune::CallSize cs = tune::call_size(p.collective, sizes[si], n, kDtypeSize);
        if (cs.count == 0) continue;
        const auto sched = schedule::make(p.collective, p.algorithm, {hosts, per_host}, cs.row_bytes, kDtypeSize, options);
        if (!sched.declined.empty()) continue;
        // The elapsed time every rank agreed on at the last probe; the
        // estimate scales this pair's previous call by the size (x4).
        const double now = seconds_since(start);
        const auto agreed_now = pr.agree_max({now});
        const double estimate = si > 0 && last_us.count(pi) ? last_us[pi] * 4 : 0;
        if (agreed_now[0] + 1.5 * estimate * 1e-6 > pr.deadline_s) {
          pr.stopped_early = true;
          continue;
        }
        CallOptions co;
        co.algorithm = p.algorithm;
        const CollectiveArgs a = pr.args(p.collective, cs.count);
        const double warm_us = pr.time_call(a, co);
        // Read before agree_max: its own allreduce becomes the last call.
        const bool forced = comm->last_algorithm() == p.algorithm;
        const auto warm = pr.agree_max({warm_us, seconds_since(start)});
        last_us[pi] = warm[0];
        if (!forced) continue;  // the same on every rank
        const int iters = tune::plan_iterations(warm[0], (pr.deadline_s - warm[1]) * 1e6,
                                                static_cast<int>(probes_left));
        if (iters == 0) {
          pr.stopped_early = true;
          continue;
        }
        std::vector<double> t(static_cast<size_t>(iters));
        comm->barrier();
        for (double& v : t) v = pr.time_call(a, co, false);
        t = pr.agree_max(t);  // per iteration, the slowest rank's time
        std::sort(t.begin(), t.end());
        const double median = t.size() % 2 ? t[t.size() / 2] : (t[t.size() / 2 - 1] + t[t.size() / 2]) / 2;
        last_us[pi] = median;
        Row row;
        row.file = "tune";
        row.row = static_cast<int>(rows.size());
        row.collective = p.collective;
        row.algorithm = p.algorithm;
        row.bytes = cs.row_bytes;
        row.dtype_size = kDtypeSize;
        row.hosts = hosts;
        row.ranks_per_host = per_host;
        row.time_us = std::max(median, 1e-3);
        rows.push_back(std::move(row));
      }
    }
  } catch (const std::exception& e) {
    // A lost peer, a timeout, a transport failure: the others may wait in a
    // collective, so the job ends here with this rank's message.
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    std::fprintf(stderr, "smddp-model: rank %d on %s: %s\n", rank, host, tools::error_text(e).c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, tools::exit_code_for(e));
    return tools::exit_code_for(e);
  }
  const double probe_s = seconds_since(start);
  const int calls = pr.calls;
  comm.reset();
  end_mpi();
  if (rank != 0) return tools::kExitOk;

  if (rows.empty()) {
    throw Error(fmt::format("tune: no probe finished within {:g} s (connecting took {:.1f} s); give it more --seconds",
                            o.seconds, probe_s));
  }
  FitResult f = fit(rows, options);
  const double mae = median_abs_error(f.residuals);
  nlohmann::json notes = nlohmann::json::array();
  if (hosts == 1) {
    notes.push_back("one host: only the shm tier can be determined; run tune on two or more hosts for the network tier");
  }
  if (per_host == 1) {
    notes.push_back("one rank per host: the shm tier is not exercised; run tune with the job's ranks per host");
  }
  if (pr.stopped_early) notes.push_back("the budget ran out before every planned probe ran");
  const double total_s = seconds_since(start);
  f.model.fit_info = {
      {"rows", f.residuals.size()},
      {"source", "smddp-model tune"},
      {"median_abs_error_pct", mae},
      {"loss", "huber on log(predicted/measured), 1.345 MAD"},
      {"notes", notes},
      {"probe",
       {{"hosts", hosts},
        {"ranks_per_host", per_host},
        {"transport", transport},
        {"calls", calls},
        {"sizes", sizes},
        {"stopped_early", pr.stopped_early},
        {"probe_seconds", probe_s},
        {"seconds", total_s},
        {"budget_seconds", o.seconds}}}};
  tools::write_atomically(o.output, to_json(f.model).dump(2) + "\n");

  std::ostringstream out;
  out << fmt::format("tune: {} ranks, {} host{} x {}, transport {}: {} rows from {} calls, {}..{} bytes, in {:.1f} s "
                     "of {:g} s{}\n",
                     n, hosts, hosts == 1 ? "" : "s", per_host, transport, rows.size(), calls, sizes.front(),
                     sizes.back(), total_s, o.seconds, pr.stopped_early ? " (budget spent: stopped early)" : "");
  print_tiers(f.model, out);
  for (const auto& note : notes) out << "note: " << note.get<std::string>() << "\n";
  out << fmt::format("median abs error: {:.1f}% over the probe's rows\n", mae);
  out << "wrote " << o.output << "\n";
  std::cout << out.str() << std::flush;
  return tools::kExitOk;
}

}  // namespace smddp::model
