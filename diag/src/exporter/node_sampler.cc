#include "exporter/node_sampler.h"

#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <set>

#include "preflight/report.h"
#include "smddp/version.h"
#include "system/devices.h"

namespace smddp::diag {
namespace {

prometheus::Gauge& single_gauge(prometheus::Registry& r, const std::string& name, const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
}

prometheus::Family<prometheus::Gauge>& gauge_family(prometheus::Registry& r, const std::string& name, const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}

}  // namespace

NodeSampler::NodeSampler(prometheus::Registry& registry, SystemRoot root, const std::string& nvml_library,
                         std::string preflight_report)
    : root_(std::move(root)),
      preflight_path_(std::move(preflight_report)),
      cpu_(single_gauge(registry, "smddp_node_cpu_utilization_ratio", "Busy share of all CPUs since the previous sample, 0..1")),
      mem_used_(single_gauge(registry, "smddp_node_memory_used_bytes", "Memory in use: MemTotal - MemAvailable")),
      mem_total_(single_gauge(registry, "smddp_node_memory_total_bytes", "Total memory: MemTotal")),
      gpu_util_family_(gauge_family(registry, "smddp_gpu_utilization_ratio", "GPU utilization (NVML), 0..1")),
      gpu_mem_family_(gauge_family(registry, "smddp_gpu_memory_used_bytes", "GPU memory in use (NVML)")),
      gpu_temp_family_(gauge_family(registry, "smddp_gpu_temperature_celsius", "GPU temperature (NVML)")),
      gpu_power_family_(gauge_family(registry, "smddp_gpu_power_watts", "GPU power draw (NVML)")),
      efa_family_(prometheus::BuildCounter()
                      .Name("smddp_efa_hw_counters_total")
                      .Help("EFA/RDMA hardware counters from sysfs hw_counters (port 0: device-wide)")
                      .Register(registry)),
      port_state_family_(gauge_family(registry, "smddp_efa_port_state",
                                      "1 for the current state of each EFA/RDMA port (sysfs ports/*/state: ACTIVE, DOWN, ...)")),
      preflight_(registry) {
  std::string why;
  nvml_ = Nvml::open(nvml_library, &why);
  int gpus = 0;
  if (nvml_) {
    try {
      gpus = nvml_->device_count();
    } catch (const std::exception& e) {
      why = e.what();
      nvml_.reset();
    }
  }
  if (!nvml_) nvml_warning_ = "smddp-diag exporter: no GPU metrics: NVML not available (" + why + ")";
  prometheus::BuildGauge()
      .Name("smddp_diag_info")
      .Help("smddp-diag exporter build and host; always 1")
      .Register(registry)
      .Add({{"version", kVersion}, {"host", hostname()}, {"nvml", nvml_ ? "available" : "unavailable"}, {"gpus", std::to_string(gpus)}})
      .Set(1);
}

NodeSampler::~NodeSampler() = default;

void NodeSampler::sample() {
  sample_host();
  sample_gpus();
  const auto rdma = discover_rdma(root_, true);
  sample_counters(rdma);
  sample_port_states(rdma);
  sample_preflight();
}

void NodeSampler::sample_host() {
  if (auto now = read_cpu_times(root_)) {
    // The first sample covers the time since boot.
    CpuTimes before = last_cpu_.value_or(CpuTimes{});
    if (auto ratio = cpu_utilization(before, *now); ratio && std::isfinite(*ratio)) cpu_.Set(*ratio);
    last_cpu_ = now;
  }
  if (auto mem = read_memory_info(root_)) {
    mem_total_.Set(static_cast<double>(mem->total_bytes));
    mem_used_.Set(static_cast<double>(mem->used_bytes()));
  }
}

void NodeSampler::set_gpu(prometheus::Family<prometheus::Gauge>& family, std::map<int, prometheus::Gauge*>& gauges,
                          const GpuSample& g, std::optional<double> value) {
  const int gpu = g.index;
  auto it = gauges.find(gpu);
  if (!value || !std::isfinite(*value)) {
    if (it != gauges.end()) {
      family.Remove(it->second);
      gauges.erase(it);
    }
    return;
  }
  // The index changes with CUDA_VISIBLE_DEVICES and reboots; the UUID and bus
  // id name the same GPU everywhere (DCGM's exporter labels them alike).
  if (it == gauges.end()) {
    it = gauges.emplace(gpu, &family.Add({{"gpu", std::to_string(gpu)}, {"uuid", g.uuid}, {"busid", g.busid}})).first;
  }
  it->second->Set(*value);
}

void NodeSampler::sample_gpus() {
  if (!nvml_) return;
  int n = 0;
  try {
    n = nvml_->device_count();
  } catch (const std::exception&) {
    return;
  }
  for (int i = 0; i < n; ++i) {
    GpuSample g = nvml_->sample(i);
    set_gpu(gpu_util_family_, gpu_util_, g, g.utilization_ratio);
    set_gpu(gpu_mem_family_, gpu_mem_, g, g.memory_used_bytes ? std::optional<double>(static_cast<double>(*g.memory_used_bytes)) : std::nullopt);
    set_gpu(gpu_temp_family_, gpu_temp_, g, g.temperature_c ? std::optional<double>(*g.temperature_c) : std::nullopt);
    set_gpu(gpu_power_family_, gpu_power_, g, g.power_watts);
  }
}

void NodeSampler::sample_counters(const std::vector<RdmaDevice>& rdma) {
  for (const auto& dev : rdma) {
    for (const auto& port : dev.ports) {
      for (const auto& [name, value] : port.counters) {
        auto key = std::make_tuple(dev.name, port.port, name);
        auto it = efa_.find(key);
        if (it != efa_.end() && value >= it->second.last) {
          it->second.counter->Increment(static_cast<double>(value - it->second.last));
          it->second.last = value;
          continue;
        }
        // New, or the hardware counter went back (driver reload): a fresh series.
        if (it != efa_.end()) efa_family_.Remove(it->second.counter);
        auto& c = efa_family_.Add({{"device", dev.name}, {"port", std::to_string(port.port)}, {"counter", name}});
        c.Increment(static_cast<double>(value));
        efa_[key] = CounterState{&c, value};
      }
    }
  }
}

void NodeSampler::sample_port_states(const std::vector<RdmaDevice>& rdma) {
  std::set<std::pair<std::string, int>> seen;
  for (const auto& dev : rdma) {
    for (const auto& port : dev.ports) {
      if (port.port <= 0) continue;
      const auto key = std::make_pair(dev.name, port.port);
      seen.insert(key);
      const std::string state = port.state.empty() ? "UNKNOWN" : port.state;
      auto it = port_states_.find(key);
      if (it != port_states_.end() && it->second.first == state) continue;
      if (it != port_states_.end()) port_state_family_.Remove(it->second.second);
      auto& g = port_state_family_.Add({{"device", dev.name}, {"port", std::to_string(port.port)}, {"state", state}});
      g.Set(1);
      port_states_[key] = {state, &g};
    }
  }
  for (auto it = port_states_.begin(); it != port_states_.end();) {  // devices that went away
    if (seen.count(it->first)) {
      ++it;
    } else {
      port_state_family_.Remove(it->second.second);
      it = port_states_.erase(it);
    }
  }
}

void NodeSampler::sample_preflight() {
  if (preflight_path_.empty()) return;
  auto text = read_file(preflight_path_);
  if (!text) {
    preflight_.update(nullptr, 0);
    preflight_seen_.clear();
    return;
  }
  if (*text == preflight_seen_) return;
  preflight_seen_ = *text;
  try {
    PreflightReport report = report_from_json(nlohmann::json::parse(*text));
    const NodeReport* node = report.node_for_host(hostname());
    preflight_.update(node, report.timestamp_ms);
    if (!node) std::cerr << "smddp-diag exporter: " << preflight_path_ << " has no result for " << hostname() << "\n";
    preflight_warned_ = false;
  } catch (const std::exception& e) {
    preflight_.update(nullptr, 0);
    if (!preflight_warned_) std::cerr << "smddp-diag exporter: " << preflight_path_ << " is not a preflight report: " << e.what() << "\n";
    preflight_warned_ = true;
  }
}

}  // namespace smddp::diag
