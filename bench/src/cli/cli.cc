#include "cli/cli.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "cli/alltoallv_matrix.h"
#include "sweep/bitwise.h"
#include "backends/mpi_tuned.h"
#include "smddp/algorithms.h"
#include "smddp/common/numbers.h"
#include "smddp/common/sizes.h"
#include "smddp/common/strings.h"
#include "smddp/error.h"
#include "smddp/tools/cli_numbers.h"
#include "smddp/tools/paths.h"

namespace smddp::bench {
namespace {

// More rows than this is a typo (-i 8 on -e 8G), not a benchmark.
constexpr size_t kMaxSweepSizes = 100000;

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

// A list names each entry once (docs/bench.md#duplicates): a duplicate would
// run the same rows twice and count them twice into the average.
template <typename T>
void refuse_duplicates(const std::vector<T>& values, const std::string& flag,
                       const std::function<std::string(const T&)>& name) {
  for (size_t i = 0; i < values.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (values[i] == values[j]) throw UsageError(flag + " names " + name(values[i]) + " twice; name it once");
    }
  }
}

// A comma list of names, or "all" alone; unknown names list the valid ones.
template <typename T, typename Parse>
std::vector<T> parse_names(const std::string& list, std::span<const T> every, Parse parse, const std::string& flag,
                           const std::string& what) {
  const std::string valid =
      join_names<T>(every, [](T x) { return to_string(x); }) + ", all";
  const auto names = common::split(list, ',');
  std::vector<T> out;
  for (const auto& name : names) {
    if (name == "all") {
      if (names.size() > 1) throw UsageError(flag + " '" + list + "': 'all' already names every " + what);
      return {every.begin(), every.end()};
    }
    auto value = parse(name);
    if (!value) throw UsageError("unknown " + what + " '" + name + "'; valid: " + valid);
    out.push_back(*value);
  }
  if (out.empty()) throw UsageError(flag + " is empty; valid: " + valid);
  refuse_duplicates<T>(out, flag, [](const T& x) { return std::string(to_string(x)); });
  return out;
}

// An integer flag that takes a few values only (nccl-tests' 0/1 switches).
void require_range(int value, int lo, int hi, const std::string& flag, const std::string& why = "") {
  if (value < lo || value > hi) {
    throw UsageError(flag + " " + std::to_string(value) + ": expected " + std::to_string(lo) +
                     (hi == lo + 1 ? " or " : "..") + std::to_string(hi) + (why.empty() ? "" : " (" + why + ")"));
  }
}

// A whole decimal number of 0..2^64-1; "-1" does not wrap around.
uint64_t parse_u64(const std::string& text, const std::string& flag) {
  std::string why;
  const auto v = common::parse_unsigned(text, &why);
  if (!v) throw UsageError(flag + " '" + text + "': " + why + "; expected an integer 0..18446744073709551615");
  return *v;
}

void check_finite(double value, double lo, double hi, const std::string& flag, const std::string& unit) {
  if (!std::isfinite(value) || value < lo || value > hi) {
    std::ostringstream s;
    s << flag << " " << value << ": expected " << unit << " " << lo << ".." << hi;
    throw UsageError(s.str());
  }
}

// NCCL_TESTS_MIN_BW (GB/s), as nccl-tests reads it: the run fails below 90% of it.
std::optional<double> nccl_tests_min_bw() {
  const char* v = std::getenv("NCCL_TESTS_MIN_BW");
  if (!v || !*v) return std::nullopt;
  std::string why;
  const auto x = common::parse_number(v, &why);
  if (!x || *x < 0 || *x > 1e9) {
    throw UsageError(std::string("NCCL_TESTS_MIN_BW='") + v + "': " + (x ? "out of range" : why) +
                     "; expected GB/s 0..1000000000");
  }
  return *x;
}

// NCCL_TESTS_SPLIT / NCCL_TESTS_SPLIT_MASK (split_groups.h). Set but empty
// is a bad value, not an unset one: nccl-tests would run one group.
std::optional<SplitRule> nccl_tests_split() {
  return split_rule(std::getenv("NCCL_TESTS_SPLIT"), std::getenv("NCCL_TESTS_SPLIT_MASK"));
}

// --alltoallv-matrix, else nccl-tests' NCCL_TESTS_ALLTOALLV_SPREAD or
// NCCL_TESTS_ALLTOALLV_MATRIX_FILE (times _MATRIX_SCALE), else the default
// weights (alltoallv_matrix.h). The flag wins over the variables; the
// variables' values are checked all the same, and a spread beside a matrix
// file (nccl-tests silently drops the spread) or a scale without a file
// are refused.
AlltoallvPattern alltoallv_pattern(const std::string& flag_path) {
  const char* spread = std::getenv("NCCL_TESTS_ALLTOALLV_SPREAD");
  const char* file = std::getenv("NCCL_TESTS_ALLTOALLV_MATRIX_FILE");
  const char* scale = std::getenv("NCCL_TESTS_ALLTOALLV_MATRIX_SCALE");
  if (spread && file) {
    throw UsageError("NCCL_TESTS_ALLTOALLV_SPREAD and NCCL_TESTS_ALLTOALLV_MATRIX_FILE are both set: a matrix file "
                     "sets every part itself (nccl-tests ignores the spread); set one of them");
  }
  if (scale && !file) {
    throw UsageError(std::string("NCCL_TESTS_ALLTOALLV_MATRIX_SCALE='") + scale +
                     "' scales NCCL_TESTS_ALLTOALLV_MATRIX_FILE, which is not set");
  }
  AlltoallvPattern p;
  if (spread) p.spread = parse_alltoallv_spread(spread);
  const double factor = scale ? parse_alltoallv_scale(scale) : 1.0;
  if (file && !*file) throw UsageError("NCCL_TESTS_ALLTOALLV_MATRIX_FILE='' names no file");
  if (!flag_path.empty()) {
    return {load_weights(flag_path), std::nullopt, {}, 0, "--alltoallv-matrix '" + flag_path + "'"};
  }
  if (file) {
    p.bytes = load_byte_matrix(file, factor, &p.dim);
    p.origin = std::string("NCCL_TESTS_ALLTOALLV_MATRIX_FILE='") + file + "'";
  } else if (spread) {
    p.origin = std::string("NCCL_TESTS_ALLTOALLV_SPREAD=") + spread;
  }
  return p;
}

// --huge-pages asks the kernel for transparent huge pages (madvise); where
// the host has them off, or the buffers are device memory, it is refused.
void check_huge_pages(MemoryKind mem) {
  if (mem != MemoryKind::Host) throw UsageError("--huge-pages applies to host buffers only (--mem host)");
  const char* path = "/sys/kernel/mm/transparent_hugepage/enabled";
  std::ifstream f(path);
  std::string modes;
  std::getline(f, modes);
  if (!f) throw UsageError(std::string("--huge-pages: this kernel has no transparent huge pages (no ") + path + ")");
  if (modes.find("[never]") != std::string::npos) {
    throw UsageError(std::string("--huge-pages: transparent huge pages are off on this host (") + path + ": " +
                     modes + ")");
  }
}

// --baseline: a file that could judge no row of this run (other
// collectives, dtypes, backends or memory) is refused before any work;
// the gate would otherwise pass without judging anything.
void check_baseline_covers_run(const BenchOptions& o) {
  if (o.baseline_path.empty()) return;
  if (o.baseline_model) {
    if (std::find(o.backends.begin(), o.backends.end(), "smddp") != o.backends.end()) return;
    throw UsageError("--baseline '" + o.baseline_path + "': a cost model judges smddp's rows only, and --backend " +
                     common::join(o.backends, ",") + " runs none: no row would be judged");
  }
  std::vector<std::string> collectives, dtypes;
  for (Collective c : o.collectives) collectives.emplace_back(to_string(c));
  for (DataType t : o.dtypes) dtypes.emplace_back(to_string(t));
  const std::string memory(to_string(o.mem));
  if (results::could_judge_any(o.baseline, collectives, dtypes, o.backends, memory)) return;
  throw UsageError("--baseline '" + o.baseline_path + "': none of its " + std::to_string(o.baseline.entries.size()) +
                   " entries is for this run (" + common::join(collectives, ",") + "; " + common::join(dtypes, ",") +
                   "; --backend " + common::join(o.backends, ",") + "; --mem " + memory + "): no row would be judged");
}

}  // namespace

void add_bench_options(CLI::App& app, BenchOptions& o, CliParts& parts) {
  // nccl-tests: a repeated flag takes its last value.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("collectives", parts.collectives,
                 "Collectives to run (allreduce allgather reducescatter broadcast reduce alltoall barrier) or all")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("-b,--minbytes", parts.minbytes, "Smallest size (8, 1e3, 4K, 1.5M, 1G)")->capture_default_str();
  app.add_option("-e,--maxbytes", parts.maxbytes,
                 "Largest size; lowered to what fits in memory, with a '# Reducing maxBytes' line")
      ->capture_default_str();
  app.add_option("-f,--stepfactor", parts.stepfactor,
                 "Multiply the size by this each row (> 1; without it, or with 1, add -i)");
  app.add_option("-i,--stepbytes", parts.stepbytes, "Add this many bytes each row when -f is not above 1 (default 1M)");
  app.add_option("-n,--iters", o.iters, "Timed iterations per row")->capture_default_str();
  app.add_option("-m,--agg_iters,--agg-iters", o.agg_iters, "Collectives per timed iteration")->capture_default_str();
  app.add_option("-w,--warmup_iters,--warmup-iters", o.warmup, "Untimed iterations per row")->capture_default_str();
  app.add_option("-N,--run_cycles,--run-cycles", o.run_cycles,
                 "Run the sweep this many times, every cycle reported (0: until SIGINT/SIGTERM)")
      ->capture_default_str();
  app.add_option("-c,--check", o.check, "Check results (0: off, N: N checking iterations)")->capture_default_str();
  app.add_option("-B,--bitwise", parts.bitwise,
                 "Run each checked row N times on identical inputs and compare the results bit for bit: across "
                 "repeats, across ranks where they must agree, repeat 1 against the expected value (implies -c)")
      ->each([&parts](const std::string&) { parts.bitwise_given = true; });
  app.add_option("-G,--cudagraph", o.cuda_graph_launches,
                 "CUDA graph launches of the timed iterations (--mem cuda, --backend nccl); 0: none")
      ->capture_default_str();
  app.add_option("-d,--datatype", parts.datatype, "Data type name, a comma list, or all")->capture_default_str();
  app.add_option("-o,--op", parts.op, "Reduction: sum prod min max avg, a comma list, or all")->capture_default_str();
  app.add_option("-r,--root", parts.root, "Root rank of rooted collectives; -1: every rank in turn")
      ->capture_default_str();
  app.add_option("-a,--average", parts.average, "Time across ranks: 0 rank 0, 1 mean, 2 min, 3 max")->capture_default_str();
  tools::seconds_option(app.add_option("-T,--timeout", o.timeout,
                                       "Seconds one collective call may take; 0: the engine's (SMDDP_TIMEOUT or 300)"));
  app.add_option("-J,--output_file,--output-file", parts.json_path, "Write results as JSON")
      ->each([&parts](const std::string&) { parts.json_given = true; });
  app.add_option("--csv", parts.csv_path, "Write results as CSV")
      ->each([&parts](const std::string&) { parts.csv_given = true; });
  app.add_option("-I,--per_iter_timing", parts.per_iter_timing, "1: time every iteration (i_min i_max i_p99 i_cv%)");
  app.add_option("-K,--per_iter_skip", o.per_iter_skip, "Leave the first K timed iterations out of -I's statistics")
      ->capture_default_str();
  app.add_option("-C,--report_cputime", parts.report_cputime, "1: name the time columns cputime (host timing is CPU time)")
      ->capture_default_str();
  app.add_option("-S,--report_timestamps", parts.report_timestamps, "1: a timestamp column on every row")
      ->capture_default_str();
  app.add_option("-u,--unalign", o.unalign, "Start both buffers this many elements past their alignment")
      ->capture_default_str();
  app.add_option("-t,--nthreads", o.nthreads, "Threads per process: 1 (start more ranks instead)")->capture_default_str();
  app.add_option("-g,--ngpus", o.ngpus, "GPUs per thread: 1 (one rank per GPU)")->capture_default_str();
  // nccl-tests switches with nothing to do on host memory: accepted, no effect.
  const std::string compat = "nccl-tests compatibility (accepted, no effect)";
  app.add_option("-z,--blocking", o.blocking, "0..3")->capture_default_str()->group(compat);
  app.add_option("-y,--stream_null", o.stream_null, "0 or 1")->capture_default_str()->group(compat);
  app.add_option("-p,--parallel_init", o.parallel_init, "0 or 1")->capture_default_str()->group(compat);
  app.add_option("-R,--local_register", o.local_register, "0..2")->capture_default_str()->group(compat);
  app.add_option("-M,--memory", o.memory_report, "0 or 1")->capture_default_str()->group(compat);
  app.add_option("-x,--cta_policy", parts.cta_policy, "-1..2")->group(compat);
  app.add_option("-D,--device_implementation", parts.device_impl, "0 (the NCCL device API is not used)")
      ->group(compat);
  app.add_option("-V,--device_cta_count", parts.device_cta_count, "1..128")->group(compat);
  app.add_option("--backend", parts.backend, "smddp, mpi, mpi:ALGORITHM (an Open MPI tuned algorithm forced, e.g. mpi:ring) or nccl; a comma list compares them")->capture_default_str();
  app.add_option("--algorithm", o.algorithm, "smddp algorithm name, or auto")->capture_default_str();
  app.add_option("--transport", o.transport, "Transport between nodes: mpi, fabric (libfabric), socket (plain TCP) or auto")
      ->capture_default_str();
  app.add_option("--provider", o.provider, "libfabric provider for --transport fabric (default: efa when present, else tcp)");
  app.add_option("--mem", parts.mem, "Buffer memory: host or cuda")->capture_default_str();
  app.add_flag("--in-place", parts.in_place, "Only in-place");
  app.add_flag("--out-of-place", parts.out_of_place, "Only out-of-place");
  app.add_flag("--both", parts.both, "Out-of-place and in-place (default)");
  app.add_flag("--per-iteration", o.per_iteration, "Time every iteration (as -I 1)");
  app.add_flag("--list-algorithms", o.list_algorithms,
               "List the smddp algorithms and exit; with --backend mpi, the Open MPI algorithms mpi:NAME can force");
  app.add_flag("--explain", o.explain,
               "With --list-algorithms: connect the ranks and print, from rank 0, the selection table this job "
               "would use (size ranges, choice, predicted time against the runner-up, parameter source)");
  app.add_flag("--list-config", o.list_config,
               "List the SMDDP_* settings (value, default or environment) and exit");
  app.add_flag("--markdown", o.markdown, "With --list-config: every setting as a Markdown table");
  app.add_flag("-q,--quiet", o.quiet, "No progress line and no table header");
  app.add_flag("--progress", o.progress,
               "Progress line on the launching terminal (/dev/tty), else stderr, even when output is redirected");
  app.add_flag("--version", o.version, "Print the version and exit");
  app.add_option("--min-busbw", o.min_busbw,
                 "Fail (exit 2) when the average bus bandwidth is below this, GB/s (default: 0.9 x NCCL_TESTS_MIN_BW)")
      ->each([&parts](const std::string&) { parts.min_busbw_given = true; });
  app.add_option("--baseline", o.baseline_path,
                 "Fail (exit 2) the rows below this expected-busbw file (profile, learned baseline or smddp-model JSON)");
  app.add_option("--baseline-tolerance", parts.baseline_tolerance,
                 "Percent below the expected busbw that still passes (default: a YAML file's tolerance; 25 for a model)");
  app.add_option("--model", parts.model_path, "Print each row's time predicted by this smddp-model JSON beside the measured one");
  app.add_option("--model-tolerance", parts.model_tolerance,
                 "Flag rows whose time is off the --model prediction by more than this percent, either way (default 25)");
  app.add_flag("--roofline", o.roofline, "Measure host memory bandwidth; show busbw as a fraction of it");
  app.add_flag("--huge-pages", o.huge_pages,
               "Host buffers on transparent huge pages (the kernel's cross-process copies run faster on them)");
  app.add_option("--seed", parts.seed, "Seed of the generated data (default 24301)");
  app.add_option("--alltoallv-matrix", o.alltoallv_matrix,
                 "alltoallv weights: n lines of n non-negative integers, row = sender (default (i+j)%n+1; wins over "
                 "NCCL_TESTS_ALLTOALLV_*)");
  app.add_flag("--per-group", o.per_group,
               "With split groups (NCCL_TESTS_SPLIT): each group's own table after each collective's, besides "
               "nccl-tests' aggregate rows");
  telemetry::add_metrics_options(app, o.metrics);
  tools::seconds_option(app.get_option("--linger"));
  // Last: every numeric option above, decimal only ("-n 0x2" is refused, not read as 2).
  tools::decimal_numbers_only(app);
}

std::vector<size_t> checked_sweep_sizes(const BenchOptions& o) {
  if (o.min_bytes == o.max_bytes) return {o.min_bytes};
  if (o.step_bytes == 0 && o.min_bytes == 0) {
    throw UsageError("-b/--minbytes 0 with -f/--stepfactor: 0 times a factor stays 0; start at -b 1 or more, "
                     "or add a step with -i");
  }
  // The count first: a sweep of a million rows is refused before it is built.
  double rows = o.step_bytes > 0 ? std::floor(static_cast<double>(o.max_bytes - o.min_bytes) /
                                              static_cast<double>(o.step_bytes)) + 1
                                 : std::floor(std::log(static_cast<double>(o.max_bytes) / o.min_bytes) /
                                              std::log(o.step_factor)) + 1;
  if (rows > static_cast<double>(kMaxSweepSizes) + 1) {
    throw UsageError("-b " + std::to_string(o.min_bytes) + " to -e " + std::to_string(o.max_bytes) + " is about " +
                     std::to_string(static_cast<unsigned long long>(rows)) + " sizes (more than " +
                     std::to_string(kMaxSweepSizes) + "); use a larger -i/--stepbytes or -f/--stepfactor");
  }
  // A step past -e leaves the one row of -b, as in nccl-tests.
  return sweep_sizes(o);
}

void finish_options(BenchOptions& o, const CliParts& parts) {
  o.alltoallv = alltoallv_pattern(o.alltoallv_matrix);
  o.split = nccl_tests_split();
  if (o.per_group && !o.split) {
    throw UsageError("--per-group needs split groups (NCCL_TESTS_SPLIT or NCCL_TESTS_SPLIT_MASK)");
  }
  o.collectives.clear();
  const std::string valid_collectives =
      join_names<Collective>(all_collectives(), [](Collective x) { return to_string(x); }) + ", all";
  for (const auto& name : parts.collectives) {
    if (name == "all") {
      if (parts.collectives.size() > 1) throw UsageError("'all' already names every collective; give it alone");
      for (Collective c : all_collectives()) o.collectives.push_back(c);
      continue;
    }
    auto c = parse_collective(name);
    if (!c) throw UsageError("unknown collective '" + name + "'; valid: " + valid_collectives);
    o.collectives.push_back(*c);
  }
  if (o.collectives.empty()) o.collectives.push_back(Collective::AllReduce);
  refuse_duplicates<Collective>(o.collectives, "the collective list",
                                [](const Collective& c) { return std::string(to_string(c)); });

  // Sizes mean the same in every tool (docs/bench.md#sizes): K, KB and KiB are 1024.
  o.min_bytes = common::parse_size_or_throw(parts.minbytes, "-b/--minbytes");
  o.max_bytes = common::parse_size_or_throw(parts.maxbytes, "-e/--maxbytes");
  if (o.min_bytes > o.max_bytes) {
    throw UsageError("-b/--minbytes (" + parts.minbytes + ") is above -e/--maxbytes (" + parts.maxbytes + ")");
  }
  // nccl-tests: a factor above 1 multiplies; otherwise -i (1 MiB) is added.
  o.step_factor = 1;
  if (!parts.stepfactor.empty()) {
    std::string why;
    const auto f = common::parse_number(parts.stepfactor, &why);
    if (!f || *f < 1 || *f > 1e6) {
      throw UsageError("-f/--stepfactor '" + parts.stepfactor + "': " + (f ? "out of range" : why) +
                       "; expected a factor 1..1000000 (1: add -i)");
    }
    o.step_factor = *f;
  }
  o.step_bytes = 0;
  if (!(o.step_factor > 1)) {
    o.step_bytes = parts.stepbytes.empty() ? size_t{1} << 20 : common::parse_size_or_throw(parts.stepbytes, "-i/--stepbytes");
    if (o.step_bytes == 0) throw UsageError("-i/--stepbytes 0 cannot grow the size; expected 1 or more bytes");
  } else if (!parts.stepbytes.empty()) {
    common::parse_size_or_throw(parts.stepbytes, "-i/--stepbytes");  // unused beside -f, but still a size
  }
  checked_sweep_sizes(o);
  if (o.alltoallv.fixed_bytes() && o.min_bytes != o.max_bytes &&
      std::find(o.collectives.begin(), o.collectives.end(), Collective::AllToAllV) != o.collectives.end()) {
    throw UsageError(o.alltoallv.origin + " sets the bytes of every part: give -b equal to -e (one row), as "
                     "nccl-tests requires; -b " + parts.minbytes + " -e " + parts.maxbytes + " would sweep");
  }

  if (o.iters < 1) throw UsageError("-n/--iters must be at least 1");
  if (o.warmup < 0) throw UsageError("-w/--warmup_iters must not be negative");
  if (o.check < 0) throw UsageError("-c/--check must not be negative");
  if (parts.bitwise_given) {
    require_range(parts.bitwise, 1, kMaxBitwiseRepeats, "-B/--bitwise", "repeats of each checked row");
    o.bitwise = parts.bitwise;
  }
  if (o.agg_iters < 1) throw UsageError("-m/--agg_iters must be at least 1");
  if (o.run_cycles < 0) throw UsageError("-N/--run_cycles must not be negative (0: until a signal)");
  // -T and --linger: seconds 0..common::kMaxSeconds, checked as they are parsed (seconds_option).
  if (parts.min_busbw_given) {
    check_finite(o.min_busbw, 0, 1e9, "--min-busbw", "GB/s");
    o.min_busbw_set = true;
  } else if (auto bw = nccl_tests_min_bw()) {
    o.min_busbw = 0.9 * *bw;
    o.min_busbw_set = true;
  }
  // Checked again where the endpoint opens; here so that a bad value is
  // refused even when no metrics are exported.
  require_range(o.metrics.prom_port, 0, 65535, "--prom-port", "0: no endpoint");
  require_range(parts.average, 0, 3, "-a/--average");
  // --baseline takes a YAML baseline or a cost model (docs/model.md, "Using the model as a baseline").
  if (parts.baseline_tolerance != -1) {
    if (o.baseline_path.empty()) throw UsageError("--baseline-tolerance needs --baseline FILE");
    check_finite(parts.baseline_tolerance, 0, 99.999, "--baseline-tolerance", "percent");
  }
  const double baseline_tolerance = parts.baseline_tolerance != -1 ? parts.baseline_tolerance / 100 : -1;
  if (!o.baseline_path.empty() && results::is_model_file(o.baseline_path)) {
    o.baseline_model = results::load_model_baseline(o.baseline_path, "--baseline", baseline_tolerance >= 0 ? baseline_tolerance : 0.25);
  } else if (!o.baseline_path.empty()) {
    o.baseline = results::load_baseline(o.baseline_path);
    if (baseline_tolerance >= 0) o.baseline.tolerance = baseline_tolerance;  // entries with their own keep theirs
  }
  if (parts.model_tolerance != -1) {
    if (parts.model_path.empty()) throw UsageError("--model-tolerance needs --model MODEL.json");
    check_finite(parts.model_tolerance, 0, 1e6, "--model-tolerance", "percent");
  }
  if (!parts.model_path.empty()) {
    o.model = results::load_model_baseline(parts.model_path, "--model", parts.model_tolerance != -1 ? parts.model_tolerance / 100 : 0.25);
  }
  o.average = static_cast<Average>(parts.average);

  // -r: a rank, or -1 for every rank in turn (checked against the job's size later).
  {
    std::string why;
    const auto r = common::parse_integer(parts.root, &why);
    if (!r || *r < -1 || *r > std::numeric_limits<int>::max()) {
      throw UsageError("-r/--root '" + parts.root + "': " + (r ? "out of range" : why) +
                       "; expected a rank, or -1 for every rank in turn");
    }
    o.all_roots = *r == -1;
    o.root = o.all_roots ? 0 : static_cast<int>(*r);
  }
  if (!parts.seed.empty()) o.seed = parse_u64(parts.seed, "--seed");

  // nccl-tests' switches.
  if (o.nthreads != 1) {
    throw UsageError("-t/--nthreads " + std::to_string(o.nthreads) +
                     ": smddp-bench runs one rank per process; start more ranks instead (mpirun -np N)");
  }
  if (o.ngpus != 1) {
    throw UsageError("-g/--ngpus " + std::to_string(o.ngpus) +
                     ": one device per process (host memory, or one GPU per rank with --mem cuda); "
                     "start one rank per GPU instead (mpirun -np N)");
  }
  if (parts.per_iter_timing != -1) {
    require_range(parts.per_iter_timing, 0, 1, "-I/--per_iter_timing");
    o.per_iteration = o.per_iteration || parts.per_iter_timing == 1;
  }
  if (o.per_iter_skip != 0) {
    if (!o.per_iteration) throw UsageError("-K/--per_iter_skip needs per-iteration timing (-I 1)");
    require_range(o.per_iter_skip, 0, o.iters - 1, "-K/--per_iter_skip", "fewer than -n/--iters");
  }
  require_range(parts.report_cputime, 0, 1, "-C/--report_cputime");
  require_range(parts.report_timestamps, 0, 1, "-S/--report_timestamps");
  o.report_cputime = parts.report_cputime == 1;
  o.report_timestamps = parts.report_timestamps == 1;
  require_range(o.unalign, 0, 4096, "-u/--unalign", "elements");
  require_range(o.blocking, 0, 3, "-z/--blocking");
  require_range(o.stream_null, 0, 1, "-y/--stream_null");
  require_range(o.parallel_init, 0, 1, "-p/--parallel_init");
  require_range(o.local_register, 0, 2, "-R/--local_register");
  require_range(o.memory_report, 0, 1, "-M/--memory");
  require_range(parts.cta_policy, -1, 2, "-x/--cta_policy");
  require_range(parts.device_impl, 0, 0, "-D/--device_implementation",
                "NCCL device implementations need NCCL's device API, which smddp-bench does not use");
  require_range(parts.device_cta_count, 1, 128, "-V/--device_cta_count");

  o.dtypes = parse_names<DataType>(parts.datatype, all_dtypes(), parse_dtype, "-d/--datatype", "datatype");
  o.ops = parse_names<ReduceOp>(parts.op, all_ops(), parse_op, "-o/--op", "op");

  o.backends = common::split(parts.backend, ',');
  if (o.backends.empty()) throw UsageError("--backend is empty; valid: smddp, mpi, mpi:ALGORITHM, nccl");
  for (const auto& b : o.backends) {
    // One list of backend names, shared with the rows and baselines (smddp/results/rows.h).
    if (!results::is_backend_name(b)) throw UsageError(results::unknown_name("backend", b));
  }
  refuse_duplicates<std::string>(o.backends, "--backend", [](const std::string& b) { return b; });

  // Every requested collective must have the forced algorithm: one that
  // lacks it would fail after the others' rows ran.
  if (o.algorithm != "auto") {
    for (Collective c : o.collectives) {
      if (algorithm_exists(c, o.algorithm)) continue;
      std::string names;
      for (const auto& a : list_algorithms()) {
        if (a.collective == c) names += (names.empty() ? "" : ", ") + std::string(a.name);
      }
      throw UsageError("unknown algorithm '" + o.algorithm + "' for " + std::string(to_string(c)) +
                       " (--algorithm applies to every collective named); valid: auto" +
                       (names.empty() ? "" : ", " + names));
    }
  }

  if (!is_network_transport(o.transport)) {
    throw UsageError("unknown --transport '" + o.transport + "'; valid: " + network_transport_list());
  }

  auto mem = parse_memory_kind(parts.mem);
  if (!mem) throw UsageError("unknown --mem '" + parts.mem + "'; valid: host, cuda");
  o.mem = *mem;
  if (o.huge_pages) check_huge_pages(o.mem);

  check_baseline_covers_run(o);

  int placements = parts.in_place + parts.out_of_place + parts.both;
  if (placements > 1) throw UsageError("--in-place, --out-of-place and --both exclude each other");
  o.placement = parts.in_place ? Placement::InPlace : parts.out_of_place ? Placement::OutOfPlace : Placement::Both;

  // -G (nccl-tests' CUDA graphs): only NCCL's calls on device memory can be captured.
  if (o.cuda_graph_launches < 0) throw UsageError("-G/--cudagraph must not be negative");
  if (o.cuda_graph_launches > 0 && (o.mem != MemoryKind::Cuda || o.backends != std::vector<std::string>{"nccl"})) {
    throw UsageError("-G/--cudagraph " + std::to_string(o.cuda_graph_launches) +
                     " needs --mem cuda and --backend nccl alone: only NCCL's device calls can be captured into a "
                     "CUDA graph (use -G 0)");
  }

  // Output files (docs/bench.md#output-files): named, writable, and distinct.
  if (parts.json_given && parts.json_path.empty()) throw UsageError("-J/--output_file '' names no file");
  if (parts.csv_given && parts.csv_path.empty()) throw UsageError("--csv '' names no file");
  o.json_path = parts.json_path;
  o.csv_path = parts.csv_path;
  tools::check_writable(o.json_path, "-J/--output_file");
  tools::check_writable(o.csv_path, "--csv");
  if (!o.json_path.empty() && !o.csv_path.empty() && tools::same_file(o.json_path, o.csv_path)) {
    throw UsageError("-J '" + o.json_path + "' and --csv '" + o.csv_path + "' name the same file");
  }
  if (!o.metrics.emf_target.empty() && o.metrics.emf_target.find("://") == std::string::npos) {
    for (const auto& [path, flag] : {std::pair{o.json_path, "-J"}, std::pair{o.csv_path, "--csv"}}) {
      if (!path.empty() && tools::same_file(path, o.metrics.emf_target)) {
        throw UsageError(std::string(flag) + " '" + path + "' and --emf '" + o.metrics.emf_target +
                         "' name the same file");
      }
    }
  }
}

}  // namespace smddp::bench
