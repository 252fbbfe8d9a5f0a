// The exporter's --inspector source: NCCL Inspector output (a file, or a
// directory of per-process .log/.jsonl JSON lines and per-GPU .prom files)
// re-read every interval and served under our names (docs/metrics.md,
// "NCCL Inspector"):
//   smddp_inspector_busbw_bytes_per_second{labels}   last bus bandwidth
//   smddp_inspector_algbw_bytes_per_second{labels}   last algorithm bandwidth (JSON only)
//   smddp_inspector_time_seconds{labels}             last time of one operation
//   smddp_inspector_operations_total{labels}         JSON records read
//   smddp_inspector_files{format}, smddp_inspector_bad_files,
//   smddp_inspector_bad_lines_total, smddp_inspector_last_record_timestamp_seconds
// labels: backend="nccl", host, job_id, comm, rank, gpu, nranks, nnodes,
// collective, size, algorithm, protocol (InspectorKey).
// Reads are bounded: JSON files are followed from where the last read ended
// (at most 16 MiB of new bytes a read; older bytes are skipped), .prom files
// are read whole (at most 16 MiB). A file that cannot be read or holds lines
// that are not Inspector records costs one warning line until it is good
// again, and counts in smddp_inspector_bad_files; it never stops the exporter.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <map>
#include <ostream>
#include <string>

#include "exporter/inspector_parse.h"

namespace smddp::diag {

class InspectorSource {
 public:
  // `warnings` gets the one-line warnings (std::cerr in the exporter).
  InspectorSource(prometheus::Registry& registry, std::string path, std::ostream& warnings);
  void sample();

  // Refuses (UsageError) a path that exists but is neither a directory nor
  // a regular file; one that does not exist yet is accepted (the job makes it).
  static void check_path(const std::string& path);

 private:
  struct FileState {
    bool prom = false;
    uint64_t offset = 0;      // JSON: bytes consumed
    bool resync = false;      // JSON: the next read starts mid-line
    std::string partial;      // JSON: a line not ended yet
    std::string last_text;    // .prom: the last contents read
    std::map<InspectorKey, InspectorRecord> records;
    std::map<InspectorKey, uint64_t> new_operations;  // JSON records since the last sample
    double mtime = 0;
    std::string problem;      // why the file is bad ("" when good)
    bool warned = false;
  };
  void read_json(const std::string& path, FileState& file);
  void read_prom(const std::string& path, FileState& file);
  void publish();

  std::string path_;
  std::ostream& warnings_;
  std::map<std::string, FileState> files_;
  bool too_many_warned_ = false;
  prometheus::Family<prometheus::Gauge>& busbw_;
  prometheus::Family<prometheus::Gauge>& algbw_;
  prometheus::Family<prometheus::Gauge>& time_;
  prometheus::Family<prometheus::Counter>& operations_;
  prometheus::Family<prometheus::Gauge>& files_family_;
  prometheus::Gauge& bad_files_;
  prometheus::Counter& bad_lines_;
  prometheus::Gauge& last_record_;
  struct Series {
    prometheus::Gauge* busbw = nullptr;
    prometheus::Gauge* algbw = nullptr;
    prometheus::Gauge* time = nullptr;
    prometheus::Counter* operations = nullptr;
  };
  std::map<InspectorKey, Series> series_;
};

}  // namespace smddp::diag
