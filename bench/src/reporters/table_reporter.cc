// The console table in nccl-tests 2.19's layout, so its log parsers read
// ours unchanged (docs/bench.md, "The table"). Each collective is a section
// of its own, as if its *_perf binary had run: preamble, header, rows,
// footer. A row has nccl-tests' 13 fields (size count type redop root, then
// time algbw busbw #wrong for out-of-place and in-place), with -I the four
// per-iteration fields after each placement's. Our columns (backend,
// algorithm, ratio, roofline fraction) follow only when backends are
// compared or --roofline asks for them; --model's (the predicted time, each
// placement's deviation from it, a flag) after those, only with --model.
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <string>

#include "reporters/reporter.h"
#include "smddp/types.h"

namespace smddp::bench {
namespace {

// A number in `width` characters, as precise as fits (nccl-tests' rule:
// two decimals, one, none, then exponent notation).
std::string fit(double v, int width) {
  char buf[64];
  for (const char* fmt : {"%*.2f", "%*.1f", "%*.0f"}) {
    if (std::snprintf(buf, sizeof buf, fmt, width, v) <= width) return buf;
  }
  std::snprintf(buf, sizeof buf, width >= 7 ? "%*.1e" : "%*.0e", width, v);
  return buf;
}

// printf onto the end of `out`.
__attribute__((format(printf, 2, 3))) void append(std::string& out, const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  if (n > 0) out.append(buf, std::min(static_cast<size_t>(n), sizeof buf - 1));
}

class TableReporter final : public Reporter {
 public:
  explicit TableReporter(bool quiet) : quiet_(quiet) {}

  void begin(const RunContext& ctx) override {
    ctx_ = &ctx;
    const auto& o = *ctx.options;
    extras_ = o.backends.size() > 1 || ctx.memory_bandwidth_gbps > 0;
    open_section(o.collectives.front());
  }

  void row(const std::vector<RowResult>& results) override {
    if (results.empty()) return;
    if (results.front().collective != section_) {
      close_section(nullptr);
      open_section(results.front().collective);
    }
    // One line per backend; out-of-place and in-place results side by side.
    for (size_t i = 0; i < results.size();) {
      const RowResult& first = results[i];
      const RowResult* oop = nullptr;
      const RowResult* ip = nullptr;
      size_t j = i;
      for (; j < results.size() && results[j].backend == first.backend; ++j) {
        (results[j].in_place ? ip : oop) = &results[j];
        wrong_ += results[j].wrong;
        if (results[j].bitwise) bitwise_ += results[j].bitwise->differences();
        averages_.add(results[j]);
      }
      std::fputs(format_line(first, oop, ip).c_str(), stdout);
      for (size_t k = i; k < j; ++k) {
        if (results[k].straggler) {
          const auto& s = *results[k].straggler;
          std::printf("#  straggler (%s, %s): rank %d on %s is %.0f%% slower than the median rank\n",
                      results[k].backend.c_str(), results[k].in_place ? "in-place" : "out-of-place", s.rank,
                      s.host.c_str(), s.slower_pct);
        }
        // Split groups: the slowest one, when it lags as a straggler would.
        const SlowestGroup slow = slowest_group(results[k]);
        if (slow.group && slow.slower_pct > kSlowGroupPct) {
          std::printf("#  slow group (%s, %s): group %d (%d ranks) is %.0f%% slower than the fastest, group %d\n",
                      results[k].backend.c_str(), results[k].in_place ? "in-place" : "out-of-place", slow.group->group,
                      slow.group->nranks, slow.slower_pct, slow.fastest);
        }
        if (slow.group && results[k].backend == ctx_->options->backends.front()) {
          ++slowest_[slow.group->group];
          slower_pct_[slow.group->group] += slow.slower_pct;
          ++judged_;
        }
      }
      for (size_t k = i; k < j; ++k) print_bitwise(results[k]);
      if (ctx_->options->per_group) add_group_lines(results, first, oop, ip);
      i = j;
    }
    std::fflush(stdout);
  }

  void end(const Summary& s) override {
    close_section(&s);
    if (s.below_threshold) {
      std::printf("# Below threshold: a collective's average bus bandwidth is under --min-busbw %g GB/s\n",
                  s.threshold_gbps);
    }
    if (const auto& m = ctx_->options->model) {
      std::printf("# model: %zu of %zu rows deviate more than %g%% (%s", s.model_flagged.size(), s.model_predicted,
                  m->tolerance * 100, m->origin.c_str());
      if (s.model_unpredicted) std::printf("; %zu rows without a prediction, see the -J rows' model.error", s.model_unpredicted);
      std::printf(")\n");
      for (const auto& f : s.model_flagged) std::printf("# model: flagged: %s\n", f.c_str());
    }
    std::fflush(stdout);
  }

 private:
  void open_section(Collective c) {
    section_ = c;
    wrong_ = 0;
    bitwise_ = 0;
    averages_ = BusbwAverages{};
    group_lines_.clear();
    slowest_.clear();
    slower_pct_.clear();
    judged_ = 0;
    const RunContext& ctx = *ctx_;
    const auto& o = *ctx.options;
    const std::string program = nccl_tests_program(c);
    if (!quiet_) {
      std::printf("# smddp-bench version %s reductions=%s mpi=%s backends=", ctx.versions.at("smddp").c_str(),
                  value(ctx, "reductions").c_str(), value(ctx, "mpi").c_str());
      for (size_t b = 0; b < o.backends.size(); ++b) std::printf("%s%s", b ? "," : "", o.backends[b].c_str());
      std::printf("\n# Collective test starting: %s\n", program.c_str());
      const bool factor = o.step_bytes == 0;
      char step[64];
      if (factor) std::snprintf(step, sizeof step, "%g(factor)", o.step_factor);
      else std::snprintf(step, sizeof step, "%zu(bytes)", o.step_bytes);
      std::printf("# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %s warmup iters: %d iters: %d agg iters: %d "
                  "validation: %d graph: 0 unalign: %d\n",
                  o.nthreads, o.ngpus, o.min_bytes, o.max_bytes, step, o.warmup, o.iters, o.agg_iters, o.check,
                  o.unalign);
      if (o.per_iteration) {
        std::printf("# Per-Iteration Report: host wall-clock time of each iteration; i_* over its slowest rank");
        if (o.per_iter_skip > 0) std::printf("; statistics leave out the first %d iterations", o.per_iter_skip);
        std::printf(" \n");
      }
      std::printf("#\n# Using devices\n");
      for (int r = 0; r < ctx.nranks; ++r) {
        const int pid = r < static_cast<int>(ctx.pids.size()) ? ctx.pids[r] : 0;
        // Host memory has no device: -1, and the node the rank runs on.
        std::printf("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s memory, node %d\n", r, ctx.group_of(r), pid,
                    ctx.hosts[r].c_str(), -1, std::string(to_string(o.mem)).c_str(),
                    std::string(to_string(o.mem)).c_str(), ctx.nodes[r]);
      }
      if (o.split) {
        const auto groups = ctx.group_members();
        std::printf("# split groups (%s): %zu groups run at once:", o.split->setting.c_str(), groups.size());
        for (const auto& [color, ranks] : groups) std::printf(" group %d: %zu ranks;", color, ranks.size());
        std::printf(" the rows aggregate them (time -a over every rank, bandwidth per group)\n");
      }
      if (ctx.nnodes > 1) std::printf("# transport between nodes: %s\n", ctx.transport.c_str());
      if (ctx.memory_bandwidth_gbps > 0) {
        std::printf("# host memory bandwidth (copy): %.2f GB/s\n", ctx.memory_bandwidth_gbps);
      }
    }
    print_header();
    std::fflush(stdout);
  }

  void print_header() {
    const auto& o = *ctx_->options;
    const bool iter = o.per_iteration;
    const char* time = o.report_cputime ? "cputime" : "time";
    std::printf("#\n");
    if (extras_) {
      std::printf("# ratio: the first backend's (%s) busbw over this backend's, time over the first's for a "
                  "barrier: above 1 is slower\n",
                  o.backends.front().c_str());
    }
    // Column titles: our extras after nccl-tests' columns.
    std::string titles, units;
    char buf[256];
    std::snprintf(buf, sizeof buf, "# %10s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
    titles = buf;
    std::snprintf(buf, sizeof buf, "# %10s  %12s  %8s  %6s  %6s", "(B)", "(elements)", "", "", "");
    units = buf;
    for (int p = 0; p < 2; ++p) {
      std::snprintf(buf, sizeof buf, "  %7s  %6s  %6s  %6s", time, "algbw", "busbw", "#wrong");
      titles += buf;
      std::snprintf(buf, sizeof buf, "  %7s  %6s  %6s  %6s", "(us)", "(GB/s)", "(GB/s)", "");
      units += buf;
      if (iter) {
        std::snprintf(buf, sizeof buf, "  %7s  %7s  %7s  %7s", "i_min", "i_max", "i_p99", "i_cv%");
        titles += buf;
        std::snprintf(buf, sizeof buf, "  %7s  %7s  %7s  %7s", "(us)", "(us)", "(us)", "(%)");
        units += buf;
      }
    }
    if (o.report_timestamps) {  // -S: nccl-tests' column after the in-place block
      std::snprintf(buf, sizeof buf, " %19s", "timestamp");
      titles += buf;
      std::snprintf(buf, sizeof buf, " %19s", kTimestampFormat);
      units += buf;
    }
    if (extras_) {
      std::snprintf(buf, sizeof buf, "  %8s  %18s  %6s%s", "backend", "algorithm", "ratio",
                    ctx_->memory_bandwidth_gbps > 0 ? "    roof" : "");
      titles += buf;
      std::snprintf(buf, sizeof buf, "  %8s  %18s  %6s%s", "", "", "", ctx_->memory_bandwidth_gbps > 0 ? "  (frac)" : "");
      units += buf;
    }
    if (o.model) {
      std::snprintf(buf, sizeof buf, "  %9s  %7s  %7s  %4s", "model", "dev%", "dev%", "flag");
      titles += buf;
      std::snprintf(buf, sizeof buf, "  %9s  %7s  %7s  %4s", "(us)", "(oop)", "(ip)", "");
      units += buf;
    }
    const int block = iter ? 70 : 34;  // one placement's columns
    std::printf("# %10s  %12s  %8s  %6s  %6s  %-*s%-*s\n", "", "", "", "", "", block,
                iter ? "         out-of-place (+ per-iteration)" : "         out-of-place", block,
                iter ? "         in-place (+ per-iteration)" : "         in-place");
    std::printf("%s \n%s \n", titles.c_str(), units.c_str());
  }

  void close_section(const Summary* s) {
    const auto& o = *ctx_->options;
    // --per-group: each group's table, every line a comment, so that
    // nccl-tests' log readers see the aggregate rows only.
    for (const auto& [color, lines] : group_lines_) {
      const auto groups = ctx_->group_members();
      std::string ranks;
      for (const auto& [c, members] : groups) {
        if (c != color) continue;
        for (int r : members) append(ranks, "%s%d", ranks.empty() ? "" : ",", r);
      }
      std::printf("#\n# Group %d (ranks %s), as it alone would report its rows:\n", color, ranks.c_str());
      print_header();
      std::fputs(lines.c_str(), stdout);
    }
    std::printf("# %-20s : %llu %s\n", "Out of bounds values", static_cast<unsigned long long>(wrong_),
                wrong_ ? "FAILED" : "OK");
    if (o.bitwise > 0 && section_ != Collective::Barrier) {  // a barrier has no data to compare
      std::printf("# %-20s : %llu %s\n", "Bitwise differences", static_cast<unsigned long long>(bitwise_),
                  bitwise_ ? "FAILED" : "OK");
    }
    const auto first = averages_.average(o.backends.front(), section_);
    // A barrier moves no bytes: no bandwidth to average (docs/bench.md).
    std::printf("# %-20s : %s %s\n", "Avg bus bandwidth", first ? fit_g(*first).c_str() : "N/A",
                std::string(busbw_verdict(first, o)).c_str());
    for (size_t b = 1; b < o.backends.size(); ++b) {
      auto avg = averages_.average(o.backends[b], section_);
      if (avg) std::printf("# %s average bus bandwidth : %s\n", o.backends[b].c_str(), fit_g(*avg).c_str());
    }
    if (judged_ > 0) {
      // The group slowest most often (the lowest colour of a tie), over the first backend's results.
      int worst = slowest_.begin()->first;
      for (const auto& [color, times] : slowest_) {
        if (times > slowest_[worst]) worst = color;
      }
      std::printf("# %-20s : group %d, in %d of %d results, on average %.0f%% slower than the fastest group\n",
                  "Slowest group", worst, slowest_[worst], judged_, slower_pct_[worst] / slowest_[worst]);
    }
    std::printf("#\n# Collective test concluded: %s\n#\n", nccl_tests_program(section_).c_str());
    std::printf(s && !s->error.empty() ? "# error: %s\n" : "\n", s ? s->error.c_str() : "");
    std::fflush(stdout);
  }

  static constexpr const char* kTimestampFormat = "%Y-%m-%d %H:%M:%S";
  static std::string now_local() {
    char buf[32];
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    std::strftime(buf, sizeof buf, kTimestampFormat, &tm);
    return buf;
  }

  static std::string fit_g(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
  }

  static std::string value(const RunContext& ctx, const char* key) {
    auto it = ctx.versions.find(key);
    std::string v = it == ctx.versions.end() ? "unknown" : it->second;
    for (char& ch : v) {
      if (ch == ' ') ch = '_';  // one token, as nccl-tests' version fields
    }
    return v;
  }

  std::string format_line(const RowResult& r, const RowResult* oop, const RowResult* ip) {
    const auto& o = *ctx_->options;
    std::string line;
    std::string redop = collective_reduces(r.collective) ? std::string(to_string(r.op)) : "none";
    append(line, "%12zu  %12zu  %8s  %6s  %6d", (oop ? oop : ip)->bytes, (oop ? oop : ip)->count,
           std::string(to_string(r.dtype)).c_str(), redop.c_str(), r.root);
    for (const RowResult* p : {oop, ip}) {
      if (!p) {
        append(line, "  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
        if (o.per_iteration) append(line, "  %7s  %7s  %7s  %7s", "N/A", "N/A", "N/A", "N/A");
        continue;
      }
      std::string wrong = p->checked ? fit_g(static_cast<double>(p->wrong)) : "N/A";
      append(line, "  %7s  %6s  %6s  %6s", fit(p->time_us, 7).c_str(), fit(p->algbw_gbps, 6).c_str(),
             fit(p->busbw_gbps, 6).c_str(), wrong.c_str());
      if (o.per_iteration) {
        const IterationStats s = p->stats.value_or(IterationStats{});
        append(line, "  %7s  %7s  %7s  %7s", fit(s.min_us, 7).c_str(), fit(s.max_us, 7).c_str(),
               fit(s.p99_us, 7).c_str(), fit(s.cv * 100, 7).c_str());
      }
    }
    if (o.report_timestamps) append(line, "%21s", now_local().c_str());
    if (extras_) {
      const RowResult& main = oop ? *oop : *ip;
      append(line, "  %8s  %18s  %6.2f", r.backend.c_str(), main.algorithm.c_str(), main.ratio);
      if (ctx_->memory_bandwidth_gbps > 0) append(line, "  %6.2f", main.roof_fraction);
    }
    if (o.model) format_model(line, oop, ip);
    line += "\n";
    return line;
  }

  // --per-group: this line's results as each group alone would report them,
  // kept until the section closes; commented out, aligned with the header.
  void add_group_lines(const std::vector<RowResult>& results, const RowResult& first, const RowResult* oop,
                       const RowResult* ip) {
    const RowResult& any = oop ? *oop : *ip;
    // The ratio within the group: the first backend's group result over this one's.
    const auto part = [&](const RowResult& r, size_t g) {
      RowResult out = group_row(r, r.groups[g]);
      for (const auto& f : results) {
        if (f.backend != results.front().backend || f.in_place != r.in_place || g >= f.groups.size()) continue;
        const GroupResult& fg = f.groups[g];
        out.ratio = r.collective == Collective::Barrier || out.busbw_gbps <= 0
                        ? (fg.time_us > 0 ? out.time_us / fg.time_us : 1)
                        : fg.busbw_gbps / out.busbw_gbps;
      }
      return out;
    };
    for (size_t g = 0; g < any.groups.size(); ++g) {
      std::optional<RowResult> goop, gip;
      if (oop && g < oop->groups.size()) goop = part(*oop, g);
      if (ip && g < ip->groups.size()) gip = part(*ip, g);
      std::string line = format_line(first, goop ? &*goop : nullptr, gip ? &*gip : nullptr);
      if (line.rfind("  ", 0) == 0) line.replace(0, 2, "# ");
      else line.insert(0, "# ");
      group_lines_[any.groups[g].group] += line;
    }
  }

  // -B: one line per difference shown, then how many more, each naming its
  // row so that a line read alone (grep) says where it comes from.
  static void print_bitwise(const RowResult& r) {
    if (!r.bitwise || r.bitwise->differences() == 0) return;
    const RowBitwise& b = *r.bitwise;
    char label[160];
    const std::string op = collective_reduces(r.collective) ? " " + std::string(to_string(r.op)) : "";
    std::snprintf(label, sizeof label, "# bitwise (%s %zu B %s%s, %s, %s):",
                  std::string(to_string(r.collective)).c_str(), r.bytes, std::string(to_string(r.dtype)).c_str(),
                  op.c_str(), r.backend.c_str(), r.in_place ? "in-place" : "out-of-place");
    for (const BitDifference& d : b.shown) std::printf("%s %s\n", label, format_difference(d, b.repeats).c_str());
    std::printf("%s %llu differences (%llu against the expected value, %llu against repeat 1, %llu across ranks)%s\n",
                label, static_cast<unsigned long long>(b.differences()),
                static_cast<unsigned long long>(b.against_expected),
                static_cast<unsigned long long>(b.against_first_repeat),
                static_cast<unsigned long long>(b.against_ranks),
                b.differences() > b.shown.size() ? ", the first shown above" : "");
  }

  // model(us) of the out-of-place row (else in-place), each placement's
  // deviation, "!" when either is flagged; N/A without a prediction.
  static void format_model(std::string& line, const RowResult* oop, const RowResult* ip) {
    const RowResult* main = oop && oop->model && oop->model->error.empty() ? oop : ip;
    const bool predicted = main && main->model && main->model->error.empty();
    append(line, "  %9s", predicted ? fit(main->model->predicted_us, 9).c_str() : "N/A");
    bool flagged = false;
    for (const RowResult* p : {oop, ip}) {
      if (!p || !p->model || !p->model->error.empty()) {
        append(line, "  %7s", "N/A");
        continue;
      }
      char dev[32];
      std::snprintf(dev, sizeof dev, "%+.1f", p->model->deviation_pct);
      append(line, "  %7s", dev);
      flagged |= p->model->flagged;
    }
    append(line, "  %4s", predicted ? (flagged ? "!" : "-") : "N/A");
  }

  // A split group slower than the fastest by more than this gets its line,
  // as a straggler rank does (sweep.cc's 10 %).
  static constexpr double kSlowGroupPct = 10;

  bool quiet_;
  bool extras_ = false;
  const RunContext* ctx_ = nullptr;
  Collective section_ = Collective::AllReduce;
  uint64_t wrong_ = 0;
  uint64_t bitwise_ = 0;  // -B: the section's differences
  BusbwAverages averages_;
  std::map<int, std::string> group_lines_;  // --per-group: the section's lines, by colour
  std::map<int, int> slowest_;              // by colour: results where the group was the slowest
  std::map<int, double> slower_pct_;        // by colour: summed over those
  int judged_ = 0;                          // results with two or more groups
};

}  // namespace

std::unique_ptr<Reporter> make_table_reporter(bool quiet) { return std::make_unique<TableReporter>(quiet); }

}  // namespace smddp::bench
