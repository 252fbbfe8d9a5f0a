#include "bench_registry.h"

#include <chrono>

namespace smddp::telemetry {
namespace {

// Cut at a character boundary: half a UTF-8 sequence would make the
// exposition invalid UTF-8 (found by fuzz/prometheus_escape.cc).
std::string bounded(const std::string& value) {
  if (value.empty()) return "none";
  if (value.size() <= kMaxLabelValueLength) return value;
  size_t cut = kMaxLabelValueLength;
  // value[cut] continuing a character: back to its first byte (at most 3 back).
  for (int k = 0; k < 3 && (static_cast<unsigned char>(value[cut]) & 0xc0) == 0x80; ++k) --cut;
  return value.substr(0, cut);
}

double seconds_since_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

template <typename T>
prometheus::Family<T>& family(prometheus::Registry& registry, const char* name, const char* help) {
  if constexpr (std::is_same_v<T, prometheus::Gauge>) {
    return prometheus::BuildGauge().Name(name).Help(help).Register(registry);
  } else {
    return prometheus::BuildCounter().Name(name).Help(help).Register(registry);
  }
}

}  // namespace

prometheus::Labels row_labels(const BenchRow& row) {
  prometheus::Labels labels{{"collective", bounded(row.collective)}, {"dtype", bounded(row.dtype)},
                            {"op", bounded(row.op)},                 {"size", std::to_string(row.bytes)},
                            {"backend", bounded(row.backend)},       {"algorithm", bounded(row.algorithm)},
                            {"placement", row.in_place ? "in-place" : "out-of-place"}};
  if (!row.group.empty()) labels["group"] = bounded(row.group);  // split groups only: other runs' series unchanged
  return labels;
}

BenchRegistry::BenchRegistry(const RunInfo& run, const std::string& host)
    : info_(family<prometheus::Gauge>(*registry_, "smddp_bench_info",
                                      "Run metadata of smddp-bench; always 1, the labels carry the information")),
      busbw_(family<prometheus::Gauge>(*registry_, "smddp_bench_busbw_bytes_per_second",
                                       "Bus bandwidth of the last result for these labels (nccl-tests busbw)")),
      algbw_(family<prometheus::Gauge>(*registry_, "smddp_bench_algbw_bytes_per_second",
                                       "Algorithm bandwidth (size / time) of the last result for these labels")),
      time_(family<prometheus::Gauge>(*registry_, "smddp_bench_time_seconds",
                                      "Mean time of one collective call of the last result for these labels")),
      wrong_(family<prometheus::Counter>(*registry_, "smddp_bench_wrong_values_total",
                                         "Result elements that differed from the reference")),
      bitwise_(family<prometheus::Counter>(*registry_, "smddp_bench_bitwise_differences_total",
                                           "Differences smddp-bench -B found bit for bit: elements unlike the "
                                           "expected value or repeat 1, outputs unlike the other ranks'")),
      iterations_(family<prometheus::Counter>(*registry_, "smddp_bench_iterations_total",
                                              "Timed collective calls")),
      results_(family<prometheus::Counter>(*registry_, "smddp_bench_results_total",
                                           "Result rows recorded")),
      timeouts_(family<prometheus::Counter>(*registry_, "smddp_bench_timeouts_total",
                                            "Collective calls that passed their deadline")),
      fabric_counters_(family<prometheus::Counter>(
          *registry_, "smddp_bench_fabric_delta_total",
          "How much an RDMA error counter (retransmits, drops, link downs) grew during the rows of a collective")),
      last_update_(family<prometheus::Gauge>(*registry_, "smddp_bench_last_update_timestamp_seconds",
                                             "Unix time of the last recorded result")),
      exit_code_(family<prometheus::Gauge>(*registry_, "smddp_bench_exit_code",
                                           "Exit code of smddp-bench, set when the sweep ends")) {
  info_
      .Add({{"version", bounded(run.version)},
            {"backends", bounded(run.backends)},
            {"hosts", bounded(run.hosts_csv)},
            {"host", bounded(host)},
            {"nranks", std::to_string(run.nranks)},
            {"nnodes", std::to_string(run.nnodes)},
            {"mem", bounded(run.mem)}})
      .Set(1);
  touch();
}

std::vector<prometheus::MetricFamily> BenchRegistry::Collect() const {
  auto families = registry_->Collect();
  for (auto& f : latency_.Collect()) families.push_back(std::move(f));
  return families;
}

void BenchRegistry::touch() { last_update_.Add({}).Set(seconds_since_epoch()); }

void BenchRegistry::record(const BenchRow& row) {
  const prometheus::Labels labels = row_labels(row);
  constexpr double kBytesPerGB = 1e9;
  constexpr double kSecondsPerUs = 1e-6;
  busbw_.Add(labels).Set(row.busbw_gbps * kBytesPerGB);
  algbw_.Add(labels).Set(row.algbw_gbps * kBytesPerGB);
  time_.Add(labels).Set(row.time_us * kSecondsPerUs);
  if (row.max_us > 0) {  // per-iteration statistics were measured
    std::vector<LatencySummaries::Quantile> quantiles;
    for (const auto& q : kLatencyQuantiles) quantiles.push_back({q.quantile, row.*q.field * kSecondsPerUs});
    latency_.observe(labels, std::move(quantiles), row.iterations,
                     row.time_us * kSecondsPerUs * static_cast<double>(row.iterations));
  }
  wrong_.Add(labels).Increment(static_cast<double>(row.wrong));
  if (row.bitwise_differences) bitwise_.Add(labels).Increment(static_cast<double>(*row.bitwise_differences));
  iterations_.Add(labels).Increment(static_cast<double>(row.iterations));
  results_.Add({{"collective", bounded(row.collective)}, {"backend", bounded(row.backend)}}).Increment();
  timeouts_.Add({{"collective", bounded(row.collective)}});  // present at 0 from the first result on
  for (const auto& c : row.fabric_counters) {
    fabric_counters_
        .Add({{"collective", bounded(row.collective)}, {"size", std::to_string(row.bytes)}, {"host", bounded(c.host)},
              {"device", bounded(c.device)}, {"port", bounded(c.port)}, {"counter", bounded(c.counter)}})
        .Increment(static_cast<double>(c.delta));
  }
  touch();
}

void BenchRegistry::record_timeout(const std::string& collective) {
  timeouts_.Add({{"collective", bounded(collective)}}).Increment();
  touch();
}

void BenchRegistry::set_exit_code(int exit_code) { exit_code_.Add({}).Set(exit_code); }

}  // namespace smddp::telemetry
