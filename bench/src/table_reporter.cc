// The console table, in nccl-tests' layout so existing parsers keep working:
// size count type redop root | out-of-place time algbw busbw #wrong |
// in-place time algbw busbw #wrong, then our extra columns at the end
// (backend, algorithm, ratio against the first backend, roofline fraction).
#include <cstdio>
#include <string>

#include "reporter.h"

namespace smddp::bench {
namespace {

std::string time_str(double us) {
  char buf[32];
  if (us >= 1e7) std::snprintf(buf, sizeof buf, "%7.0f", us);
  else if (us >= 1e4) std::snprintf(buf, sizeof buf, "%7.0f", us);
  else std::snprintf(buf, sizeof buf, "%7.2f", us);
  return buf;
}

class TableReporter final : public Reporter {
 public:
  explicit TableReporter(bool quiet) : quiet_(quiet) {}

  void begin(const RunContext& ctx) override {
    ctx_ = &ctx;
    const auto& o = *ctx.options;
    if (!quiet_) {
      std::printf("# smddp-bench %s: %d ranks on %d nodes, backends", ctx.versions.at("smddp").c_str(),
                  ctx.nranks, ctx.nnodes);
      for (const auto& b : o.backends) std::printf(" %s", b.c_str());
      std::printf(", %d warmup + %d iterations, check %d\n", o.warmup, o.iters, o.check);
      for (int r = 0; r < ctx.nranks; ++r) {
        std::printf("#  rank %2d on %s (node %d)\n", r, ctx.hosts[r].c_str(), ctx.nodes[r]);
      }
      if (ctx.memory_bandwidth_gbps > 0) {
        std::printf("# host memory bandwidth (copy): %.2f GB/s\n", ctx.memory_bandwidth_gbps);
      }
    }
    const bool roof = ctx.memory_bandwidth_gbps > 0;
    std::printf("#\n#%86s%40s\n", "out-of-place", "in-place");
    std::printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s  %8s  %18s  %6s%s\n",
                "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
                "algbw", "busbw", "#wrong", "backend", "algorithm", "ratio", roof ? "   roof" : "");
    std::printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s  %8s  %18s  %6s%s\n",
                "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
                "", "", "", "", roof ? "  (frac)" : "");
    std::fflush(stdout);
  }

  void row(const std::vector<RowResult>& results) override {
    // One line per backend; out-of-place and in-place results side by side.
    for (size_t i = 0; i < results.size();) {
      const RowResult& first = results[i];
      const RowResult* oop = nullptr;
      const RowResult* ip = nullptr;
      size_t j = i;
      for (; j < results.size() && results[j].backend == first.backend; ++j) {
        (results[j].in_place ? ip : oop) = &results[j];
      }
      print_line(first, oop, ip);
      for (size_t k = i; k < j; ++k) {
        if (results[k].straggler) {
          const auto& s = *results[k].straggler;
          std::printf("#  straggler (%s, %s): rank %d on %s is %.0f%% slower than the median rank\n",
                      results[k].backend.c_str(), results[k].in_place ? "in-place" : "out-of-place", s.rank,
                      s.host.c_str(), s.slower_pct);
        }
      }
      i = j;
    }
    std::fflush(stdout);
  }

  void end(const Summary& s) override {
    std::printf("# Out of bounds values : %llu %s\n", static_cast<unsigned long long>(s.wrong),
                s.wrong ? "FAILED" : "OK");
    bool first = true;
    for (const auto& backend : ctx_->options->backends) {
      auto it = s.avg_busbw_gbps.find(backend);
      if (it == s.avg_busbw_gbps.end()) continue;
      if (first) std::printf("# Avg bus bandwidth    : %g \n", it->second);
      else std::printf("# Avg bus bandwidth (%s) : %g\n", backend.c_str(), it->second);
      first = false;
    }
    if (s.below_threshold) {
      std::printf("# Below threshold: average bus bandwidth under --min-busbw %g GB/s\n", s.threshold_gbps);
    }
    if (!s.error.empty()) std::printf("# Ended early: %s\n", s.error.c_str());
    std::printf("#\n");
    std::fflush(stdout);
  }

 private:
  void print_line(const RowResult& r, const RowResult* oop, const RowResult* ip) {
    std::string redop = collective_reduces(r.collective) ? std::string(to_string(r.op)) : "none";
    std::printf("%12zu  %12zu  %8s  %6s  %6d", r.bytes, r.count, std::string(to_string(r.dtype)).c_str(),
                redop.c_str(), r.root);
    for (const RowResult* p : {oop, ip}) {
      if (!p) {
        std::printf("  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
        continue;
      }
      std::string wrong = p->checked ? std::to_string(p->wrong) : "N/A";
      std::printf("  %7s  %6.2f  %6.2f  %6s", time_str(p->time_us).c_str(), p->algbw_gbps, p->busbw_gbps,
                  wrong.c_str());
    }
    const RowResult& main = oop ? *oop : *ip;
    std::printf("  %8s  %18s  %6.2f", r.backend.c_str(), main.algorithm.c_str(), main.ratio);
    if (main.roof_fraction >= 0) std::printf("  %6.2f", main.roof_fraction);
    std::printf("\n");
    if (main.stats) {
      const auto& s = *main.stats;
      std::printf("#  per-iteration (us): min %.2f p50 %.2f p95 %.2f p99 %.2f max %.2f cv %.3f\n", s.min_us,
                  s.p50_us, s.p95_us, s.p99_us, s.max_us, s.cv);
    }
  }

  bool quiet_;
  const RunContext* ctx_ = nullptr;
};

}  // namespace

std::unique_ptr<Reporter> make_table_reporter(bool quiet) { return std::make_unique<TableReporter>(quiet); }

}  // namespace smddp::bench
