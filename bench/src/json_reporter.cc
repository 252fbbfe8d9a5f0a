// JSON results: one document, rewritten atomically after every row, so a
// crash leaves a valid file with the rows done so far ("complete": false).
#include <nlohmann/json.hpp>

#include "reporter.h"
#include "smddp/tools/atomic_file.h"

namespace smddp::bench {

nlohmann::json row_to_json(const RowResult& r) {
  nlohmann::json j = {
      {"row", r.row},
      {"collective", to_string(r.collective)},
      {"dtype", to_string(r.dtype)},
      {"op", collective_reduces(r.collective) ? std::string(to_string(r.op)) : "none"},
      {"root", r.root},
      {"bytes", r.bytes},
      {"count", r.count},
      {"backend", r.backend},
      {"algorithm", r.algorithm},
      {"placement", r.in_place ? "in-place" : "out-of-place"},
      {"time_us", r.time_us},
      {"algbw_gbps", r.algbw_gbps},
      {"busbw_gbps", r.busbw_gbps},
      {"wrong", r.checked ? nlohmann::json(r.wrong) : nlohmann::json(nullptr)},
      {"iterations", r.iterations},
      {"ratio", r.ratio},
  };
  if (r.roof_fraction >= 0) j["roof_fraction"] = r.roof_fraction;
  if (r.stats) {
    const auto& s = *r.stats;
    j["per_iteration"] = {{"min_us", s.min_us}, {"p50_us", s.p50_us}, {"p95_us", s.p95_us},
                          {"p99_us", s.p99_us}, {"max_us", s.max_us}, {"mean_us", s.mean_us},
                          {"cv", s.cv}};
  }
  if (r.fabric_counters.read) j["fabric_counters"] = fabric_counters_to_json(r.fabric_counters);
  if (r.straggler) {
    j["straggler"] = {{"rank", r.straggler->rank}, {"host", r.straggler->host},
                      {"slower_pct", r.straggler->slower_pct}};
  }
  return j;
}

namespace {

class JsonReporter final : public Reporter {
 public:
  explicit JsonReporter(std::string path) : path_(std::move(path)) {}

  void begin(const RunContext& ctx) override {
    const auto& o = *ctx.options;
    doc_ = nlohmann::json::object();
    doc_["tool"] = "smddp-bench";
    doc_["versions"] = ctx.versions;
    doc_["argv"] = o.argv;
    doc_["environment"] = ctx.environment;
    doc_["started_utc"] = ctx.started_utc;
    doc_["nranks"] = ctx.nranks;
    doc_["nnodes"] = ctx.nnodes;
    nlohmann::json ranks = nlohmann::json::array();
    for (int r = 0; r < ctx.nranks; ++r) ranks.push_back({{"rank", r}, {"host", ctx.hosts[r]}, {"node", ctx.nodes[r]}});
    doc_["ranks"] = ranks;
    doc_["devices"] = {{"memory", to_string(o.mem)}};
    if (ctx.memory_bandwidth_gbps > 0) doc_["host_memory_bandwidth_gbps"] = ctx.memory_bandwidth_gbps;
    doc_["options"] = {{"minbytes", o.min_bytes}, {"maxbytes", o.max_bytes}, {"stepfactor", o.step_factor},
                       {"stepbytes", o.step_bytes}, {"iters", o.iters}, {"warmup", o.warmup},
                       {"check", o.check}, {"backends", o.backends}, {"algorithm", o.algorithm},
                       {"seed", o.seed}, {"average", static_cast<int>(o.average)}};
    doc_["rows"] = nlohmann::json::array();
    doc_["complete"] = false;
    flush();
  }

  void row(const std::vector<RowResult>& results) override {
    for (const auto& r : results) doc_["rows"].push_back(row_to_json(r));
    flush();
  }

  void end(const Summary& s) override {
    doc_["totals"] = {{"rows", doc_["rows"].size()}, {"wrong", s.wrong},
                      {"avg_busbw_gbps", s.avg_busbw_gbps}, {"below_threshold", s.below_threshold},
                      {"exit_code", s.exit_code}};
    if (!s.error.empty()) doc_["error"] = s.error;
    if (s.hang) doc_["hang"] = hang_to_json(*s.hang);
    doc_["complete"] = s.complete;
    flush();
  }

 private:
  void flush() { tools::write_atomically(path_, doc_.dump(2) + "\n"); }

  std::string path_;
  nlohmann::json doc_;
};

}  // namespace

std::unique_ptr<Reporter> make_json_reporter(const std::string& path) {
  return std::make_unique<JsonReporter>(path);
}

}  // namespace smddp::bench
