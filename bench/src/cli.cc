#include "cli.h"

#include <algorithm>
#include <sstream>

#include "alltoallv_matrix.h"
#include "mpi_tuned.h"
#include "smddp/algorithms.h"
#include "smddp/error.h"
#include "smddp/tools/paths.h"
#include "smddp/tools/sizes.h"

namespace smddp::bench {
namespace {

template <typename T, typename Range, typename Name>
std::string join_names(const Range& values, Name name) {
  std::ostringstream s;
  bool first = true;
  for (const T& v : values) {
    s << (first ? "" : ", ") << name(v);
    first = false;
  }
  return s.str();
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// A comma list of names, or "all"; unknown names list the valid ones.
template <typename T, typename Parse>
std::vector<T> parse_names(const std::string& list, std::span<const T> every, Parse parse, const std::string& flag,
                           const std::string& what) {
  const std::string valid =
      join_names<T>(every, [](T x) { return to_string(x); }) + ", all";
  std::vector<T> out;
  for (const auto& name : split(list)) {
    if (name == "all") return {every.begin(), every.end()};
    auto value = parse(name);
    if (!value) throw UsageError("unknown " + what + " '" + name + "'; valid: " + valid);
    out.push_back(*value);
  }
  if (out.empty()) throw UsageError(flag + " is empty; valid: " + valid);
  return out;
}

}  // namespace

void add_bench_options(CLI::App& app, BenchOptions& o, CliParts& parts) {
  app.add_option("collectives", parts.collectives,
                 "Collectives to run (allreduce allgather reducescatter broadcast reduce alltoall barrier) or all");
  app.add_option("-b,--minbytes", parts.minbytes, "Smallest size (K, M, G suffixes)")->capture_default_str();
  app.add_option("-e,--maxbytes", parts.maxbytes, "Largest size")->capture_default_str();
  app.add_option("-f,--stepfactor", o.step_factor, "Multiply the size by this each row")->capture_default_str();
  app.add_option("-i,--stepbytes", parts.stepbytes, "Add this many bytes each row (instead of -f)");
  app.add_option("-n,--iters", o.iters, "Timed iterations per row")->capture_default_str();
  app.add_option("-w,--warmup-iters", o.warmup, "Untimed iterations per row")->capture_default_str();
  app.add_option("-c,--check", o.check, "Check results (0: off, N: N checking iterations)")->capture_default_str();
  app.add_option("-d,--datatype", parts.datatype, "Data type name, a comma list, or all")->capture_default_str();
  app.add_option("-o,--op", parts.op, "Reduction: sum prod min max avg, a comma list, or all")->capture_default_str();
  app.add_option("-r,--root", o.root, "Root rank of broadcast and reduce")->capture_default_str();
  app.add_option("-a,--average", parts.average, "Time across ranks: 0 rank 0, 1 mean, 2 min, 3 max")->capture_default_str();
  app.add_option("-T,--timeout", o.timeout, "Seconds one collective call may take (default: SMDDP_TIMEOUT or 300)");
  app.add_option("-J,--output-file", o.json_path, "Write results as JSON (rewritten after every row)");
  app.add_option("--csv", o.csv_path, "Write results as CSV (rewritten after every row)");
  app.add_option("--backend", parts.backend, "smddp, mpi, mpi:ALGORITHM (an Open MPI tuned algorithm forced, e.g. mpi:ring) or nccl; a comma list compares them")->capture_default_str();
  app.add_option("--algorithm", o.algorithm, "smddp algorithm name, or auto")->capture_default_str();
  app.add_option("--transport", o.transport, "Transport between nodes: mpi, fabric (libfabric) or auto")
      ->capture_default_str();
  app.add_option("--provider", o.provider, "libfabric provider for --transport fabric (default: efa when present, else tcp)");
  app.add_option("--mem", parts.mem, "Buffer memory: host or cuda")->capture_default_str();
  app.add_flag("--in-place", parts.in_place, "Only in-place");
  app.add_flag("--out-of-place", parts.out_of_place, "Only out-of-place");
  app.add_flag("--both", parts.both, "Out-of-place and in-place (default)");
  app.add_flag("--per-iteration", o.per_iteration, "Time every iteration: min p50 p95 p99 max cv per row");
  app.add_flag("--list-algorithms", o.list_algorithms, "List the smddp algorithms and exit");
  app.add_flag("--list-config", o.list_config,
               "List the SMDDP_* settings (value, default or environment) and exit");
  app.add_flag("--markdown", o.markdown, "With --list-config: every setting as a Markdown table");
  app.add_flag("-q,--quiet", o.quiet, "No progress line and no table header");
  app.add_flag("--progress", o.progress,
               "Progress line on the launching terminal (/dev/tty), else stderr, even when output is redirected");
  app.add_flag("--version", o.version, "Print the version and exit");
  app.add_option("--min-busbw", o.min_busbw, "Fail (exit 2) when the average bus bandwidth is below this, GB/s");
  app.add_flag("--roofline", o.roofline, "Measure host memory bandwidth; show busbw as a fraction of it");
  app.add_option("--seed", o.seed, "Seed of the generated data")->capture_default_str();
  app.add_option("--alltoallv-matrix", o.alltoallv_matrix,
                 "alltoallv weights: n lines of n non-negative integers, row = sender (default (i+j)%n+1)");
  telemetry::add_metrics_options(app, o.metrics);
}

void finish_options(BenchOptions& o, const CliParts& parts) {
  if (!o.alltoallv_matrix.empty()) o.alltoallv_weights = load_weights(o.alltoallv_matrix);
  o.collectives.clear();
  for (const auto& name : parts.collectives) {
    if (name == "all") {
      for (Collective c : all_collectives()) o.collectives.push_back(c);
      continue;
    }
    auto c = parse_collective(name);
    if (!c) {
      throw UsageError("unknown collective '" + name + "'; valid: " +
                       join_names<Collective>(all_collectives(), [](Collective x) { return to_string(x); }) + ", all");
    }
    o.collectives.push_back(*c);
  }
  if (o.collectives.empty()) o.collectives.push_back(Collective::AllReduce);

  // Sizes mean the same in every tool (docs/bench.md#sizes): K, KB and KiB are 1024.
  o.min_bytes = tools::parse_size_or_throw(parts.minbytes, "-b/--minbytes");
  o.max_bytes = tools::parse_size_or_throw(parts.maxbytes, "-e/--maxbytes");
  if (o.min_bytes > o.max_bytes) {
    throw UsageError("-b/--minbytes (" + parts.minbytes + ") is above -e/--maxbytes (" + parts.maxbytes + ")");
  }
  if (!parts.stepbytes.empty()) {
    o.step_bytes = tools::parse_size_or_throw(parts.stepbytes, "-i/--stepbytes");
    if (o.step_bytes == 0) throw UsageError("-i/--stepbytes must be above 0");
  } else if (!(o.step_factor > 1) && o.min_bytes != o.max_bytes) {
    throw UsageError("-f/--stepfactor must be above 1");
  }
  if (o.iters < 1) throw UsageError("-n/--iters must be at least 1");
  if (o.warmup < 0) throw UsageError("-w/--warmup-iters must not be negative");
  if (o.check < 0) throw UsageError("-c/--check must not be negative");
  if (o.timeout < 0) throw UsageError("-T/--timeout must not be negative");
  if (o.min_busbw < 0) throw UsageError("--min-busbw must not be negative");
  if (parts.average < 0 || parts.average > 3) throw UsageError("-a/--average must be 0, 1, 2 or 3");
  o.average = static_cast<Average>(parts.average);

  o.dtypes = parse_names<DataType>(parts.datatype, all_dtypes(), parse_dtype, "-d/--datatype", "datatype");
  o.ops = parse_names<ReduceOp>(parts.op, all_ops(), parse_op, "-o/--op", "op");

  o.backends = split(parts.backend);
  if (o.backends.empty()) throw UsageError("--backend is empty; valid: smddp, mpi, mpi:ALGORITHM, nccl");
  for (const auto& b : o.backends) {
    const bool mpi = is_mpi_backend(b) && b != "mpi:";  // mpi:ALGORITHM forces an Open MPI tuned one
    if (b != "smddp" && b != "nccl" && !mpi) {
      throw UsageError("unknown backend '" + b + "'; valid: smddp, mpi, mpi:ALGORITHM (e.g. mpi:ring), nccl");
    }
  }

  if (o.algorithm != "auto") {
    bool found = false;
    std::string names;
    for (Collective c : o.collectives) {
      found = found || algorithm_exists(c, o.algorithm);
    }
    for (const auto& a : list_algorithms()) {
      if (std::find(o.collectives.begin(), o.collectives.end(), a.collective) == o.collectives.end()) continue;
      if (names.find(std::string(a.name)) == std::string::npos) names += (names.empty() ? "" : ", ") + std::string(a.name);
    }
    if (!found) throw UsageError("unknown algorithm '" + o.algorithm + "'; valid: auto, " + names);
  }

  if (o.transport != "mpi" && o.transport != "fabric" && o.transport != "auto") {
    throw UsageError("unknown --transport '" + o.transport + "'; valid: mpi, fabric, auto");
  }

  auto mem = parse_memory_kind(parts.mem);
  if (!mem) throw UsageError("unknown --mem '" + parts.mem + "'; valid: host, cuda");
  o.mem = *mem;

  int placements = parts.in_place + parts.out_of_place + parts.both;
  if (placements > 1) throw UsageError("--in-place, --out-of-place and --both exclude each other");
  o.placement = parts.in_place ? Placement::InPlace : parts.out_of_place ? Placement::OutOfPlace : Placement::Both;

  tools::check_writable(o.json_path, "-J/--output-file");
  tools::check_writable(o.csv_path, "--csv");
  if (!o.json_path.empty() && o.json_path == o.csv_path) throw UsageError("-J and --csv name the same file");
}

}  // namespace smddp::bench
