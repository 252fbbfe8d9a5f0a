// The exporter's view of a node, refreshed every interval into a Prometheus
// registry (scrapes read the registry and never wait for a sample):
//   smddp_node_cpu_utilization_ratio, smddp_node_memory_{used,total}_bytes   /proc
//   smddp_gpu_{utilization_ratio,memory_used_bytes,temperature_celsius,power_watts}{gpu,uuid,busid}   NVML
//   smddp_efa_hw_counters_total{device,port,counter}   /sys/class/infiniband/*/ports/*/hw_counters
//   smddp_efa_port_state{device,port,state}   1 for the port's current state (ACTIVE, DOWN, ...): ports/*/state
// A value that is not a finite number is never exported: the series is left out.
//   smddp_preflight_*   the last preflight JSON report (preflight_metrics.h)
//   smddp_diag_info{version,host,nvml,gpus}   always 1
// Series carry no host label: Prometheus' instance label names the node.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "preflight/preflight_metrics.h"
#include "shared/files.h"
#include "system/devices.h"
#include "system/nvml.h"
#include "system/proc_stats.h"

namespace smddp::diag {

class NodeSampler {
 public:
  NodeSampler(prometheus::Registry& registry, SystemRoot root, const std::string& nvml_library, std::string preflight_report);
  ~NodeSampler();
  void sample();
  // Why there are no GPU metrics ("" when NVML is there): printed by the
  // caller once its outputs are written, so a refused --port-file stays
  // the one line of a refusal.
  const std::string& nvml_warning() const { return nvml_warning_; }

 private:
  void sample_host();
  void sample_gpus();
  void sample_counters(const std::vector<RdmaDevice>& rdma);
  void sample_preflight();
  void sample_port_states(const std::vector<RdmaDevice>& rdma);
  void set_gpu(prometheus::Family<prometheus::Gauge>& family, std::map<int, prometheus::Gauge*>& gauges, const GpuSample& gpu,
               std::optional<double> value);

  SystemRoot root_;
  std::string preflight_path_;
  std::unique_ptr<Nvml> nvml_;
  std::string nvml_warning_;
  std::optional<CpuTimes> last_cpu_;
  prometheus::Gauge& cpu_;
  prometheus::Gauge& mem_used_;
  prometheus::Gauge& mem_total_;
  prometheus::Family<prometheus::Gauge>& gpu_util_family_;
  prometheus::Family<prometheus::Gauge>& gpu_mem_family_;
  prometheus::Family<prometheus::Gauge>& gpu_temp_family_;
  prometheus::Family<prometheus::Gauge>& gpu_power_family_;
  std::map<int, prometheus::Gauge*> gpu_util_, gpu_mem_, gpu_temp_, gpu_power_;
  prometheus::Family<prometheus::Counter>& efa_family_;
  struct CounterState {
    prometheus::Counter* counter = nullptr;
    uint64_t last = 0;
  };
  std::map<std::tuple<std::string, int, std::string>, CounterState> efa_;
  prometheus::Family<prometheus::Gauge>& port_state_family_;
  std::map<std::pair<std::string, int>, std::pair<std::string, prometheus::Gauge*>> port_states_;  // -> state, series
  PreflightMetrics preflight_;
  std::string preflight_seen_;  // last report text, to parse only on change
  bool preflight_warned_ = false;
};

}  // namespace smddp::diag
