// CSV results: a header and one unpadded line per (row, backend,
// placement), rewritten atomically like the JSON file: at the start, at
// most every second (RewritePacer), and at the end.
#include <cstdio>
#include <sstream>

#include "reporters/reporter.h"
#include "smddp/tools/atomic_file.h"

namespace smddp::bench {
namespace {

class CsvReporter final : public Reporter {
 public:
  explicit CsvReporter(std::string path) : path_(std::move(path)) {}

  void begin(const RunContext&) override {
    text_ =
        "collective,dtype,op,root,bytes,count,backend,algorithm,placement,time_us,algbw_gbps,busbw_gbps,"
        "wrong,iterations,ratio,p50_us,p95_us,p99_us,straggler_rank,straggler_host\n";
    write();
  }

  void row(const std::vector<RowResult>& results) override {
    for (const auto& r : results) {
      std::ostringstream line;
      line << to_string(r.collective) << ',' << to_string(r.dtype) << ','
           << (collective_reduces(r.collective) ? std::string(to_string(r.op)) : "none") << ',' << r.root << ','
           << r.bytes << ',' << r.count << ',' << r.backend << ',' << r.algorithm << ','
           << (r.in_place ? "in-place" : "out-of-place") << ',' << r.time_us << ',' << r.algbw_gbps << ','
           << r.busbw_gbps << ',' << (r.checked ? std::to_string(r.wrong) : "") << ',' << r.iterations << ','
           << r.ratio << ',';
      if (r.stats) line << r.stats->p50_us << ',' << r.stats->p95_us << ',' << r.stats->p99_us;
      else line << ",,";
      line << ',';
      if (r.straggler) line << r.straggler->rank << ',' << r.straggler->host;
      else line << ',';
      text_ += line.str() + "\n";
    }
    if (pacer_.due()) write();
  }

  void end(const Summary&) override { write(); }

 private:
  void write() {
    const auto started = RewritePacer::Clock::now();
    tools::write_atomically(path_, text_);
    pacer_.wrote(started);
  }

  RewritePacer pacer_;
  std::string path_;
  std::string text_;
};

}  // namespace

std::unique_ptr<Reporter> make_csv_reporter(const std::string& path) {
  return std::make_unique<CsvReporter>(path);
}

}  // namespace smddp::bench
