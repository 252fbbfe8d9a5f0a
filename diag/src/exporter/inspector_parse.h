// Readers of NCCL's Inspector profiler plugin output (plugins/profiler/
// inspector in NCCL), both of its formats, into one record with our names
// and units (docs/metrics.md, "NCCL Inspector"):
//   JSON lines (NCCL_INSPECTOR_PROM_DUMP=0, files <host>-pid<N>.log): one
//     object per completed collective or P2P operation: header{id,
//     comm_name, rank, n_ranks, nnodes}, metadata{hostname,
//     dump_timestamp_us, ...} and coll_perf{coll, coll_msg_size_bytes,
//     coll_exec_time_us, coll_algobw_gbs, coll_busbw_gbs} or p2p_perf{p2p, ...}.
//   Prometheus text (NCCL_INSPECTOR_PROM_DUMP=1, nccl_inspector_metrics_
//     <uuid>.prom per GPU): nccl_{,p2p_}bus_bandwidth_gbs and
//     nccl_{collective,p2p}_exec_time_microseconds per (node, gpu,
//     comm_name, n_nodes, nranks, collective|p2p_operation, message_size
//     range "4-5GB", algo_proto "Ring_LL"), means over the dump interval.
// Pure functions of text: the exporter's source (inspector_source.h) and
// the unit tests call them; nothing here touches a file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace smddp::diag {

// The labels of one Inspector series under our names. A value a format
// lacks (rank in the .prom files, gpu and job_id in JSON) is "none".
struct InspectorKey {
  std::string host;        // JSON metadata.hostname, .prom node
  std::string job_id;      // .prom slurm_job_id
  std::string comm;        // comm_name (JSON: header.id when unnamed)
  std::string rank;        // JSON header.rank
  std::string gpu;         // .prom gpu "GPU3" -> "3"
  std::string nranks, nnodes;
  std::string collective;  // "AllReduce" -> "allreduce", P2P "Send" -> "send" (the bench's spelling)
  std::string size;        // bytes: the lower end of Inspector's size range ("4-5GB" -> 4294967296)
  std::string algorithm;   // "Ring_LL128" -> "ring"; JSON: "none"
  std::string protocol;    // "Ring_LL128" -> "ll128"; JSON: "none"
  auto tie() const { return std::tie(host, job_id, comm, rank, gpu, nranks, nnodes, collective, size, algorithm, protocol); }
  bool operator<(const InspectorKey& o) const { return tie() < o.tie(); }
  bool operator==(const InspectorKey& o) const { return tie() == o.tie(); }
};

// One operation (JSON) or one interval's mean (.prom). Bandwidths in
// bytes/s (Inspector's GB/s times 1e9, as nccl-tests' and ours), time in
// seconds; a value the line lacks, or that is not finite, is nullopt.
struct InspectorRecord {
  InspectorKey key;
  std::optional<double> busbw, algbw, time;
  double timestamp = 0;  // JSON dump_timestamp_us / 1e6; .prom: 0 (the caller uses the file's time)
};

// The lower end of Inspector's message size bucket for `bytes`: the value in
// the largest 1024-unit (B, KB, MB, GB, TB) that keeps it at least 1,
// rounded down, times that unit. 5000 -> 4096, 1048576 -> 1048576.
uint64_t inspector_size_bucket(uint64_t bytes);
// "4-5GB" -> 4294967296, "0B" -> 0; nullopt for anything else.
std::optional<uint64_t> parse_inspector_size_range(std::string_view text);
// "AllReduce" -> "allreduce": lowercase, letters and digits only ("none" when empty).
std::string inspector_collective_name(std::string_view nccl_name);

// One JSON line; nullopt with *why for a line that is not an Inspector
// record (not JSON, a field missing or of the wrong type, longer than 64 KiB).
std::optional<InspectorRecord> parse_inspector_json_line(std::string_view line, std::string* why);

// A whole .prom file: one record per series; a series written twice (the
// plugin appends between flushes) keeps its last values. *bad_lines counts
// lines that are neither comments nor Inspector samples; samples of other
// metric names are skipped without counting.
std::vector<InspectorRecord> parse_inspector_prom(std::string_view text, size_t* bad_lines);

}  // namespace smddp::diag
