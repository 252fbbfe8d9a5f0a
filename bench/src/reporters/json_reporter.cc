// JSON results (-J): nccl-tests 2.19's document (version 3: config with its
// devices, results per size with out_of_place/in_place and, with -I 1,
// their *_per_iter objects, out_of_bounds, average_bus_bandwidth, errors,
// end_time), so its tools read ours, plus our own keys beside them (the flat
// `rows` every smddp tool reads, backend, ranks, totals, complete). One
// document per backend: `path` for the first backend, holding every
// backend's `rows`; PATH.BACKEND.json for each further one, with its own.
//
// The file is always a whole, valid document: it is rewritten atomically
// (temporary + fsync + rename) at the start, at most every second while rows
// come (RewritePacer, reporter.h), and at the end or when the run fails.
// Each row is serialised once, so a rewrite only concatenates text; the
// rewrites during the sweep happen on a thread of their own, so the sweep
// never waits for the disk (the last one, at the end, it does wait for).
#include <algorithm>
#include <condition_variable>
#include <ctime>
#include <exception>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "supervision/hang_report.h"
#include "reporters/reporter.h"
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
    // The calls themselves (after -K), so that smddp-report compare tests
    // them, not samples rebuilt from five percentiles.
    const auto first = r.iter_times_us.begin() + std::min<std::ptrdiff_t>(r.skipped_iterations,
                                                                           std::ssize(r.iter_times_us));
    j["per_iteration"]["samples_us"] = std::vector<double>(first, r.iter_times_us.end());
  }
  if (r.fabric_counters.read) j["fabric_counters"] = fabric_counters_to_json(r.fabric_counters);
  if (r.model) {  // --model (docs/model.md, "Using the model as a baseline")
    const RowModel& m = *r.model;
    j["model"] = m.error.empty() ? nlohmann::json{{"predicted_us", m.predicted_us},
                                                  {"predicted_busbw_gbps", m.predicted_busbw_gbps},
                                                  {"deviation_pct", m.deviation_pct},
                                                  {"flagged", m.flagged}}
                                 : nlohmann::json{{"error", m.error}};
  }
  if (r.straggler) {
    j["straggler"] = {{"rank", r.straggler->rank}, {"host", r.straggler->host},
                      {"slower_pct", r.straggler->slower_pct}};
  }
  if (r.bitwise) {  // -B (docs/bench.md, "Bitwise repeatability")
    const RowBitwise& b = *r.bitwise;
    nlohmann::json shown = nlohmann::json::array();
    for (const BitDifference& d : b.shown) {
      nlohmann::json e = {{"rank", d.rank}, {"host", d.host}, {"repeat", d.repeat}, {"against", to_string(d.against)}};
      if (d.against == BitDifference::Against::Ranks) {
        e["agreed_rank"] = d.agreed_rank;
        e["agreed_digest"] = hex_bits(d.expected, 8);
        e["digest"] = hex_bits(d.received, 8);
      } else {
        e["element"] = d.element;
        e["expected"] = hex_bits(d.expected, d.bytes);
        e["received"] = hex_bits(d.received, d.bytes);
        e["bits"] = differing_bits(d.expected, d.received);
      }
      e["text"] = format_difference(d, b.repeats);
      shown.push_back(std::move(e));
    }
    j["bitwise"] = {{"repeats", b.repeats},
                    {"ranks_compared", to_string(b.ranks)},
                    {"differences", b.differences()},
                    {"against_expected", b.against_expected},
                    {"against_repeat_1", b.against_first_repeat},
                    {"against_ranks", b.against_ranks},
                    {"shown", shown},
                    {"engine_calls", b.engine_calls.empty() || b.engine_calls.front() == 0
                                         ? nlohmann::json(nullptr)
                                         : nlohmann::json(b.engine_calls)}};
  }
  if (!r.groups.empty()) {  // split groups: each group's own figures, by its colour
    nlohmann::json groups = nlohmann::json::array();
    for (const GroupResult& g : r.groups) {
      groups.push_back({{"group", g.group}, {"nranks", g.nranks}, {"bytes", g.bytes}, {"count", g.count},
                        {"time_us", g.time_us}, {"algbw_gbps", g.algbw_gbps}, {"busbw_gbps", g.busbw_gbps},
                        {"wrong", r.checked ? nlohmann::json(g.wrong) : nlohmann::json(nullptr)}});
    }
    j["groups"] = groups;
    const SlowestGroup slow = slowest_group(r);
    if (slow.group) {
      j["slowest_group"] = {{"group", slow.group->group}, {"fastest", slow.fastest}, {"slower_pct", slow.slower_pct}};
    }
  }
  return j;
}

std::string backend_json_path(const std::string& path, const std::string& backend) {
  const std::string ext = ".json";
  const bool has_ext = path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
  return (has_ext ? path.substr(0, path.size() - ext.size()) : path) + "." + backend + ext;
}

namespace {

// nccl-tests writes its booleans as the strings "true" and "false".
std::string flag(bool b) { return b ? "true" : "false"; }

// nccl-tests writes a NaN (an average over no rows) as the string "nan".
nlohmann::json number(std::optional<double> v) { return v ? nlohmann::json(*v) : nlohmann::json("nan"); }

std::string local_time() {
  char buf[32];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// Values of settings that may hold a secret stay out of the file.
std::string shown(const std::string& key, const std::string& value) {
  for (const char* word : {"SECRET", "TOKEN", "PASSWORD", "CREDENTIAL"}) {
    if (key.find(word) != std::string::npos) return "<redacted>";
  }
  return value;
}

nlohmann::json placement_json(const RowResult& r, bool cputime) {
  return {{cputime ? "cpu_time" : "time", r.time_us},
          {"alg_bw", r.algbw_gbps},
          {"bus_bw", r.busbw_gbps},
          {"nwrong", r.checked ? nlohmann::json(static_cast<double>(r.wrong)) : nlohmann::json(nullptr)}};
}

nlohmann::json per_iter_json(const RowResult& r) {
  const IterationStats& s = *r.stats;
  nlohmann::json j = {{"skipped_iterations", r.skipped_iterations},
                      {"min_us", s.min_us},
                      {"max_us", s.max_us},
                      {"avg_us", s.mean_us},
                      {"p50_us", s.p50_us},
                      {"p95_us", s.p95_us},
                      {"p99_us", s.p99_us},
                      {"stdev_us", s.stdev_us},
                      {"cv_pct", s.cv * 100},
                      {"times_us", r.iter_times_us}};
  if (r.rank_times_us.size() > 1) j["per_process_max_times_us"] = r.rank_times_us;
  return j;
}

// Writes whole files atomically on its own thread: write() hands over the
// newest text (one still waiting is replaced), finish() waits until all is
// written. A failed write is thrown from the next call.
class BackgroundWriter {
 public:
  explicit BackgroundWriter(std::string path) : path_(std::move(path)), thread_([this] { loop(); }) {}
  ~BackgroundWriter() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;

  void write(std::string text) {
    std::lock_guard<std::mutex> lock(mu_);
    rethrow();
    pending_ = std::move(text);
    cv_.notify_all();
  }
  // Waits until nothing is pending or being written.
  void finish() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !pending_ && !busy_; });
    rethrow();
  }

 private:
  void rethrow() {
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || pending_; });
      if (!pending_) return;
      std::string text = std::move(*pending_);
      pending_.reset();
      busy_ = true;
      lock.unlock();
      std::exception_ptr error;
      try {
        tools::AtomicFile file(path_);
        file.write(text);
        file.commit();
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      busy_ = false;
      if (error) error_ = error;
      cv_.notify_all();
    }
  }

  std::string path_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<std::string> pending_;
  bool busy_ = false, stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: started once the rest is ready
};

// One backend's document.
class Document {
 public:
  // `all_rows`: `rows` holds every backend's rows, else only this one's.
  Document(std::string path, std::string backend, bool all_rows)
      : path_(std::move(path)), backend_(std::move(backend)), all_rows_(all_rows), writer_(path_) {}

  void begin(const RunContext& ctx) {
    ctx_ = &ctx;
    const auto& o = *ctx.options;
    start_time_ = local_time();
    nlohmann::json head = nlohmann::json::object();
    head["version"] = 3;
    head["start_time"] = start_time_;
    head["args"] = o.argv;
    nlohmann::json env = nlohmann::json::array();
    std::map<std::string, std::string> environment;
    for (const auto& [k, v] : ctx.environment) {
      environment[k] = shown(k, v);
      env.push_back(k + "=" + environment[k]);
    }
    head["env"] = env;
    nlohmann::json config = {{"nthreads", o.nthreads}, {"ngpus", o.ngpus}, {"minimum_bytes", o.min_bytes},
                             {"maximum_bytes", o.max_bytes}};
    if (o.step_bytes > 0) config["step_bytes"] = o.step_bytes;
    else if (o.step_factor == static_cast<double>(static_cast<size_t>(o.step_factor))) {
      config["step_factor"] = static_cast<size_t>(o.step_factor);
    } else {
      config["step_factor"] = o.step_factor;
    }
    config["warmup_iters"] = o.warmup;
    config["iterations"] = o.iters;
    config["aggregated_iterations"] = o.agg_iters;
    config["validation"] = o.check;
    config["graph"] = 0;
    config["blocking_collectives"] = flag(o.blocking != 0);
    config["per_iter_timing"] = flag(o.per_iteration);
    config["per_iter_skip"] = o.per_iter_skip;
    config["parallel_init"] = flag(o.parallel_init != 0);
    nlohmann::json devices = nlohmann::json::array();
    for (int r = 0; r < ctx.nranks; ++r) {
      const std::string mem(to_string(o.mem));
      devices.push_back({{"rank", r},
                         {"group", ctx.group_of(r)},
                         {"pid", r < static_cast<int>(ctx.pids.size()) ? ctx.pids[r] : 0},
                         {"hostname", ctx.hosts[r]},
                         {"device", -1},
                         {"device_hex", mem},
                         {"device_info", mem + " memory, node " + std::to_string(ctx.nodes[r])}});
    }
    config["devices"] = devices;
    head["config"] = config;
    head_ = members(head);

    // Ours.
    nlohmann::json extra = nlohmann::json::object();
    extra["tool"] = "smddp-bench";
    extra["backend"] = backend_;
    extra["versions"] = ctx.versions;
    extra["argv"] = o.argv;
    extra["environment"] = environment;
    extra["started_utc"] = ctx.started_utc;
    extra["nranks"] = ctx.nranks;
    extra["nnodes"] = ctx.nnodes;
    extra["transport"] = ctx.transport;
    nlohmann::json ranks = nlohmann::json::array();
    for (int r = 0; r < ctx.nranks; ++r) ranks.push_back({{"rank", r}, {"host", ctx.hosts[r]}, {"node", ctx.nodes[r]}});
    extra["ranks"] = ranks;
    if (o.split) {
      nlohmann::json groups = nlohmann::json::array();
      for (const auto& [color, members] : ctx.group_members()) groups.push_back({{"group", color}, {"ranks", members}});
      extra["split"] = {{"setting", o.split->setting}, {"groups", groups}};
    }
    extra["devices"] = {{"memory", to_string(o.mem)}, {"huge_pages", o.huge_pages}};
    if (ctx.memory_bandwidth_gbps > 0) extra["host_memory_bandwidth_gbps"] = ctx.memory_bandwidth_gbps;
    extra["options"] = {{"minbytes", o.min_bytes}, {"maxbytes", o.max_bytes}, {"stepfactor", o.step_factor},
                        {"stepbytes", o.step_bytes}, {"iters", o.iters}, {"warmup", o.warmup},
                        {"check", o.check}, {"backends", o.backends}, {"algorithm", o.algorithm},
                        {"seed", o.seed}, {"average", static_cast<int>(o.average)}};
    extra_ = members(extra);
    flush(nullptr);
    writer_.finish();  // the file exists before the first row
  }

  void row(const std::vector<RowResult>& results) {
    const bool cputime = ctx_->options->report_cputime;
    const RowResult* oop = nullptr;
    const RowResult* ip = nullptr;
    for (const auto& r : results) {
      if (all_rows_ || r.backend == backend_) {
        append(rows_, row_to_json(r).dump());
        ++rows_count_;
      }
      if (r.backend != backend_) continue;
      (r.in_place ? ip : oop) = &r;
      wrong_ += r.wrong;
      averages_.add(r);
    }
    const RowResult* any = oop ? oop : ip;
    if (!any) return;
    if (sections_.empty() || sections_.back() != any->collective) sections_.push_back(any->collective);
    char root[16];
    std::snprintf(root, sizeof root, "%6i", any->root);  // a string, as nccl-tests writes it
    nlohmann::json e = {{"size", any->bytes},
                        {"count", any->count},
                        {"type", to_string(any->dtype)},
                        {"redop", collective_reduces(any->collective) ? std::string(to_string(any->op)) : "none"},
                        {"root", root}};
    e["out_of_place"] = oop ? placement_json(*oop, cputime) : nlohmann::json(nullptr);
    if (oop && oop->stats) e["out_of_place_per_iter"] = per_iter_json(*oop);
    e["in_place"] = ip ? placement_json(*ip, cputime) : nlohmann::json(nullptr);
    if (ip && ip->stats) e["in_place_per_iter"] = per_iter_json(*ip);
    e["actual_iterations"] = any->iterations;
    e["experiment_name"] = "";
    // Ours.
    e["collective"] = to_string(any->collective);
    e["backend"] = backend_;
    e["algorithm"] = any->algorithm;
    if (!ctx_->options->backends.empty() && backend_ != ctx_->options->backends.front()) e["ratio"] = any->ratio;
    append(results_, e.dump());
    if (pacer_.due()) flush(nullptr);
  }

  void end(const Summary& s) {
    flush(&s);
    writer_.finish();
  }

 private:
  static void append(std::string& list, const std::string& item) {
    if (!list.empty()) list += ",\n";
    list += item;
  }

  // An object's members as text, without its braces: `"k": v,\n...`.
  static std::string members(const nlohmann::json& obj) {
    std::string out;
    for (const auto& [k, v] : obj.items()) {
      if (!out.empty()) out += ",\n";
      out += nlohmann::json(k).dump() + ": " + v.dump();
    }
    return out;
  }

  nlohmann::json verdicts(std::optional<Collective> c) const {
    const auto& o = *ctx_->options;
    const auto avg = averages_.average(backend_, c);
    const std::string_view v = busbw_verdict(avg, o);
    return {{"out_of_bounds", {{"count", wrong_}, {"okay", flag(wrong_ == 0)}}},
            {"average_bus_bandwidth", {{"bandwidth", number(avg)}, {"okay", v.empty() ? "unchecked" : flag(v == "OK")}}}};
  }

  void flush(const Summary* s) {
    const auto started = RewritePacer::Clock::now();
    nlohmann::json tail = verdicts(std::nullopt);
    tail["errors"] = nlohmann::json::array();
    if (s && !s->error.empty()) tail["errors"].push_back(s->error);
    if (s) tail["end_time"] = local_time();
    // Ours: each collective's footer, as its own nccl-tests run would print it.
    nlohmann::json sections = nlohmann::json::array();
    for (Collective c : sections_) {
      nlohmann::json sec = verdicts(c);
      sec["collective"] = to_string(c);
      sec["program"] = nccl_tests_program(c);
      sec.erase("out_of_bounds");  // counted over the whole document only
      sections.push_back(sec);
    }
    tail["sections"] = sections;
    if (s) {
      tail["totals"] = {{"rows", rows_count_}, {"wrong", s->wrong},
                        {"avg_busbw_gbps", s->avg_busbw_gbps}, {"below_threshold", s->below_threshold},
                        {"exit_code", s->exit_code}};
      // -B only: the torch bench's documents (and older readers) keep their keys.
      if (ctx_->options->bitwise > 0) tail["totals"]["bitwise_differences"] = s->bitwise_differences;
      if (!s->error.empty()) tail["error"] = s->error;
      if (const auto& m = ctx_->options->model) {
        tail["model"] = {{"file", m->origin}, {"tolerance_pct", m->tolerance * 100},
                         {"predicted_rows", s->model_predicted}, {"unpredicted_rows", s->model_unpredicted},
                         {"flagged", s->model_flagged}};
      }
      if (s->hang) tail["hang"] = hang_to_json(*s->hang);  // docs/diag.md, Hang location
    }
    tail["complete"] = s ? s->complete : false;

    std::string text = "{\n" + head_ + ",\n\"results\": [\n" + results_ + "\n],\n" + members(tail) + ",\n" + extra_;
    text += ",\n\"rows\": [\n" + rows_ + "\n]\n}\n";
    writer_.write(std::move(text));
    pacer_.wrote(started);
  }

  std::string path_, backend_;
  bool all_rows_;
  const RunContext* ctx_ = nullptr;
  std::string start_time_, head_, extra_, results_, rows_;
  size_t rows_count_ = 0;
  uint64_t wrong_ = 0;
  BusbwAverages averages_;
  std::vector<Collective> sections_;
  RewritePacer pacer_;
  BackgroundWriter writer_;
};

class JsonReporter final : public Reporter {
 public:
  explicit JsonReporter(std::string path) : path_(std::move(path)) {}

  void begin(const RunContext& ctx) override {
    const auto& backends = ctx.options->backends;
    for (size_t b = 0; b < backends.size(); ++b) {
      docs_.push_back(
          std::make_unique<Document>(b == 0 ? path_ : backend_json_path(path_, backends[b]), backends[b], b == 0));
    }
    for (auto& d : docs_) d->begin(ctx);
  }
  void row(const std::vector<RowResult>& results) override {
    for (auto& d : docs_) d->row(results);
  }
  void end(const Summary& s) override {
    for (auto& d : docs_) d->end(s);
  }

 private:
  std::string path_;
  std::vector<std::unique_ptr<Document>> docs_;
};

}  // namespace

std::unique_ptr<Reporter> make_json_reporter(const std::string& path) {
  return std::make_unique<JsonReporter>(path);
}

}  // namespace smddp::bench
