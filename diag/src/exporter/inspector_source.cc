#include "exporter/inspector_source.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "smddp/common/input_file.h"
#include "smddp/common/strings.h"
#include "smddp/error.h"

namespace smddp::diag {
namespace {

constexpr size_t kMaxReadBytes = size_t{16} << 20;
constexpr size_t kMaxFiles = 1024;
constexpr size_t kMaxSeries = 20000;
constexpr size_t kMaxPartialLine = 64 * 1024;

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

bool is_prom(const std::string& name) { return ends_with(name, ".prom"); }
bool is_inspector_file(const std::string& name) {
  return is_prom(name) || ends_with(name, ".log") || ends_with(name, ".jsonl") || ends_with(name, ".json");
}

prometheus::Family<prometheus::Gauge>& gauges(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}

prometheus::Labels labels_of(const InspectorKey& k) {
  return {{"backend", "nccl"}, {"host", k.host},   {"job_id", k.job_id},         {"comm", k.comm},
          {"rank", k.rank},    {"gpu", k.gpu},     {"nranks", k.nranks},         {"nnodes", k.nnodes},
          {"collective", k.collective}, {"size", k.size}, {"algorithm", k.algorithm}, {"protocol", k.protocol}};
}

template <typename Metric>
void set_or_remove(prometheus::Family<Metric>& family, Metric*& metric, const InspectorKey& key, std::optional<double> value) {
  if (!value) {
    if (metric) family.Remove(metric);
    metric = nullptr;
    return;
  }
  if (!metric) metric = &family.Add(labels_of(key));
  metric->Set(*value);
}

}  // namespace

InspectorSource::InspectorSource(prometheus::Registry& registry, std::string path, std::ostream& warnings)
    : path_(std::move(path)),
      warnings_(warnings),
      busbw_(gauges(registry, "smddp_inspector_busbw_bytes_per_second",
                    "NCCL Inspector: bus bandwidth of the last operation (JSON) or the interval's mean (.prom), bytes/s")),
      algbw_(gauges(registry, "smddp_inspector_algbw_bytes_per_second",
                    "NCCL Inspector: algorithm bandwidth of the last operation (JSON output only), bytes/s")),
      time_(gauges(registry, "smddp_inspector_time_seconds",
                   "NCCL Inspector: time of the last operation (JSON) or the interval's mean (.prom), seconds")),
      operations_(prometheus::BuildCounter()
                      .Name("smddp_inspector_operations_total")
                      .Help("NCCL Inspector: operation records read from JSON output")
                      .Register(registry)),
      files_family_(gauges(registry, "smddp_inspector_files", "NCCL Inspector output files read, by format (json, prom)")),
      bad_files_(gauges(registry, "smddp_inspector_bad_files",
                        "NCCL Inspector files that cannot be read or hold lines that are not Inspector records")
                     .Add({})),
      bad_lines_(prometheus::BuildCounter()
                     .Name("smddp_inspector_bad_lines_total")
                     .Help("Lines of NCCL Inspector files that are not Inspector records")
                     .Register(registry)
                     .Add({})),
      last_record_(gauges(registry, "smddp_inspector_last_record_timestamp_seconds",
                          "Unix time of the newest NCCL Inspector record (JSON dump_timestamp_us, .prom file time)")
                       .Add({})) {}

void InspectorSource::check_path(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    if (::access(path.c_str(), R_OK | X_OK) != 0) throw UsageError("--inspector '" + path + "': cannot read the directory");
    return;
  }
  std::string why;
  uint64_t offset = ~uint64_t{0};  // past any end: reads nothing, checks the opening
  std::string none;
  why = common::read_file_tail(path, 0, &offset, &none);
  if (!why.empty()) throw UsageError("--inspector '" + path + "': cannot read: " + why);
}

void InspectorSource::sample() {
  std::vector<std::string> paths;
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    if (DIR* dir = ::opendir(path_.c_str())) {
      while (dirent* e = ::readdir(dir)) {
        const std::string name = e->d_name;
        if (name.empty() || name[0] == '.' || !is_inspector_file(name)) continue;
        paths.push_back(path_ + "/" + name);
      }
      ::closedir(dir);
    }
    std::sort(paths.begin(), paths.end());
    if (paths.size() > kMaxFiles) {
      if (!too_many_warned_) {
        warnings_ << "smddp-diag exporter: warning: --inspector " << path_ << " holds " << paths.size()
                  << " files; reading the first " << kMaxFiles << std::endl;
      }
      too_many_warned_ = true;
      paths.resize(kMaxFiles);
    }
  } else if (::stat(path_.c_str(), &st) == 0) {
    paths.push_back(path_);
  }
  std::set<std::string> present(paths.begin(), paths.end());
  for (auto it = files_.begin(); it != files_.end();) it = present.count(it->first) ? std::next(it) : files_.erase(it);

  for (const auto& p : paths) {
    FileState& file = files_[p];
    file.prom = is_prom(p);
    if (file.prom) read_prom(p, file);
    else read_json(p, file);
    if (!file.problem.empty() && !file.warned) {
      warnings_ << "smddp-diag exporter: warning: inspector file " << p << ": " << file.problem << std::endl;
      file.warned = true;
    }
    if (file.problem.empty()) file.warned = false;
  }
  publish();
}

void InspectorSource::read_json(const std::string& path, FileState& file) {
  uint64_t start = file.offset;
  std::string text;
  const std::string why = common::read_file_tail(path, kMaxReadBytes, &start, &text);
  if (!why.empty()) {
    file.problem = "cannot read: " + why;
    return;
  }
  if (file.problem.rfind("cannot read", 0) == 0) file.problem.clear();
  size_t good = 0;
  if (start != file.offset) {
    // Skipped ahead (more than a read's worth was new) or the file was
    // replaced: what is left of a line is no line.
    file.partial.clear();
    file.resync = start > file.offset;
    if (start < file.offset) file.records.clear();
  }
  file.offset = start + text.size();
  std::string_view rest(text);
  if (file.resync) {
    const size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) return;
    rest.remove_prefix(nl + 1);
    file.resync = false;
  }
  size_t bad = 0;
  std::string first_why;
  auto take = [&](std::string_view line) {
    line = common::trim(line);
    if (line.empty()) return;
    std::string line_why;
    auto rec = parse_inspector_json_line(line, &line_why);
    if (!rec) {
      if (bad++ == 0) first_why = line_why;
      return;
    }
    ++good;
    ++file.new_operations[rec->key];
    file.records[rec->key] = std::move(*rec);
  };
  for (;;) {
    const size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) break;
    if (!file.partial.empty()) {
      file.partial.append(rest.substr(0, nl));
      take(file.partial);
      file.partial.clear();
    } else {
      take(rest.substr(0, nl));
    }
    rest.remove_prefix(nl + 1);
  }
  file.partial.append(rest);
  if (file.partial.size() > kMaxPartialLine) {  // a line that never ends: drop it, resync at the next newline
    file.partial.clear();
    file.resync = true;
    if (bad++ == 0) first_why = "a line longer than 64 KiB";
  }
  if (bad) {
    bad_lines_.Increment(static_cast<double>(bad));
    file.problem = std::to_string(bad) + " line" + (bad == 1 ? "" : "s") + " not Inspector JSON records (" + first_why + ")";
  } else if (good) {
    file.problem.clear();  // good again: a later bad line warns again
  }
}

void InspectorSource::read_prom(const std::string& path, FileState& file) {
  std::string text;
  const std::string why = common::read_bounded_file(path, kMaxReadBytes, &text);
  if (!why.empty()) {
    file.problem = "cannot read: " + why;
    file.records.clear();
    return;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    file.mtime = static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) / 1e9;
  }
  size_t bad = 0;
  auto records = parse_inspector_prom(text, &bad);
  // A rewritten file is a new snapshot; a file that did not change is not counted twice.
  const bool changed = file.last_text != text;
  file.last_text = std::move(text);
  file.records.clear();
  for (auto& r : records) {
    r.timestamp = file.mtime;
    file.records[r.key] = std::move(r);
  }
  file.problem.clear();
  if (bad) {
    if (changed) bad_lines_.Increment(static_cast<double>(bad));
    file.problem = std::to_string(bad) + " line" + (bad == 1 ? "" : "s") + " not Inspector samples";
  }
}

void InspectorSource::publish() {
  std::map<InspectorKey, const InspectorRecord*> merged;
  std::map<InspectorKey, uint64_t> new_operations;
  double json_files = 0, prom_files = 0, bad_files = 0, newest = 0;
  bool capped = false;
  for (auto& [path, file] : files_) {
    (file.prom ? prom_files : json_files) += 1;
    if (!file.problem.empty()) bad_files += 1;
    for (const auto& [key, rec] : file.records) {
      if (merged.size() >= kMaxSeries && !merged.count(key)) {
        capped = true;
        continue;
      }
      merged[key] = &rec;
      newest = std::max(newest, rec.timestamp);
    }
    for (const auto& [key, n] : file.new_operations) new_operations[key] += n;
    file.new_operations.clear();
  }
  if (capped && !too_many_warned_) {
    warnings_ << "smddp-diag exporter: warning: --inspector " << path_ << ": more than " << kMaxSeries
              << " series; the rest are left out" << std::endl;
    too_many_warned_ = true;
  }
  for (auto it = series_.begin(); it != series_.end();) {
    if (merged.count(it->first)) {
      ++it;
      continue;
    }
    Series& s = it->second;
    if (s.busbw) busbw_.Remove(s.busbw);
    if (s.algbw) algbw_.Remove(s.algbw);
    if (s.time) time_.Remove(s.time);
    if (s.operations) operations_.Remove(s.operations);
    it = series_.erase(it);
  }
  for (const auto& [key, rec] : merged) {
    Series& s = series_[key];
    set_or_remove(busbw_, s.busbw, key, rec->busbw);
    set_or_remove(algbw_, s.algbw, key, rec->algbw);
    set_or_remove(time_, s.time, key, rec->time);
    auto n = new_operations.find(key);
    if (n != new_operations.end()) {
      if (!s.operations) s.operations = &operations_.Add(labels_of(key));
      s.operations->Increment(static_cast<double>(n->second));
    }
  }
  files_family_.Add({{"format", "json"}}).Set(json_files);
  files_family_.Add({{"format", "prom"}}).Set(prom_files);
  bad_files_.Set(bad_files);
  if (newest > 0) last_record_.Set(newest);
}

}  // namespace smddp::diag
