// CSV results: a header and one unpadded line per (row, backend,
// placement), rewritten atomically like the JSON file: at the start, at
// most every second (RewritePacer), and at the end.
//
// RFC 4180: a field holding a comma, a double quote, CR or LF is quoted,
// its double quotes doubled; lines end in LF. Numbers are fmt's "{}": the
// shortest text that reads back as the same double (1234567, not the
// stream default's 1.23457e+06).
#include <fmt/format.h>

#include <string_view>
#include <utility>

#include "reporters/reporter.h"
#include "smddp/tools/atomic_file.h"

namespace smddp::bench {
namespace {

// One line of fields, separated and quoted.
class CsvLine {
 public:
  void text(std::string_view field) {
    if (fields_++ > 0) line_ += ',';
    if (field.find_first_of(",\"\r\n") == std::string_view::npos) {
      line_ += field;
      return;
    }
    line_ += '"';
    for (const char c : field) {
      if (c == '"') line_ += '"';
      line_ += c;
    }
    line_ += '"';
  }
  template <typename T>
  void number(T value) {
    text(fmt::format("{}", value));
  }
  std::string done() && { return std::move(line_) + '\n'; }

 private:
  std::string line_;
  int fields_ = 0;
};

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
      CsvLine line;
      line.text(to_string(r.collective));
      line.text(to_string(r.dtype));
      line.text(collective_reduces(r.collective) ? to_string(r.op) : "none");
      line.number(r.root);
      line.number(r.bytes);
      line.number(r.count);
      line.text(r.backend);
      line.text(r.algorithm);
      line.text(r.in_place ? "in-place" : "out-of-place");
      line.number(r.time_us);
      line.number(r.algbw_gbps);
      line.number(r.busbw_gbps);
      if (r.checked) line.number(r.wrong);
      else line.text("");
      line.number(r.iterations);
      line.number(r.ratio);
      if (r.stats) {
        line.number(r.stats->p50_us);
        line.number(r.stats->p95_us);
        line.number(r.stats->p99_us);
      } else {
        for (int i = 0; i < 3; ++i) line.text("");
      }
      if (r.straggler) {
        line.number(r.straggler->rank);
        line.text(r.straggler->host);
      } else {
        line.text("");
        line.text("");
      }
      text_ += std::move(line).done();
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
