// NVML loaded at run time with dlopen: no NVML header or link dependency, so
// the tools build everywhere and say plainly when a host has no NVIDIA
// driver. The one loader of NVML: smddp-diag (topo, preflight, the
// exporter) and smddp-bench (counting the listed GPUs) both use it; which
// library to load is the caller's (SMDDP_NVML_LIBRARY, --nvml-library).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace smddp::tools {

// nvmlClocksThrottleReasons bits, by the names profiles use.
struct ThrottleReason {
  std::string_view name;
  uint64_t bit;
};
const std::vector<ThrottleReason>& throttle_reasons();
std::vector<std::string> throttle_reason_names(uint64_t mask);

// One GPU as NVML reports it. A field NVML does not support on this GPU
// stays empty; any other NVML failure is listed in `errors`.
struct GpuSample {
  int index = 0;
  std::string name, uuid, busid;  // busid canonical "0000:10:1c.0" (pci.h)
  std::optional<int> sm;          // compute capability x10 (80: sm_80)
  std::optional<unsigned> temperature_c;
  std::optional<uint64_t> ecc_uncorrected_volatile, ecc_uncorrected_aggregate;
  std::optional<unsigned> retired_pages_sbe, retired_pages_dbe;
  std::optional<bool> retired_pages_pending;
  std::optional<unsigned> remapped_rows_correctable, remapped_rows_uncorrectable;
  std::optional<bool> remap_pending, remap_failed;
  std::optional<uint64_t> throttle_reasons;
  std::optional<double> utilization_ratio;  // 0..1
  std::optional<uint64_t> memory_total_bytes, memory_used_bytes;
  std::optional<double> power_watts;
  std::vector<std::string> errors;
};

class Nvml {
 public:
  // Throws UsageError when `library` is a path (not a soname the loader
  // searches) that cannot be read; `source` names where it came from.
  static void check_library_file(const std::string& library, std::string_view source);

  // Loads and initialises NVML. nullptr when that fails, with the reason in
  // *why_not ("libnvidia-ml.so.1: cannot open shared object file ...").
  static std::unique_ptr<Nvml> open(const std::string& library, std::string* why_not);
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  const std::string& library() const { return library_; }
  std::string driver_version() const;
  // Number of GPUs; throws smddp::Error when NVML fails.
  int device_count() const;
  // Identity and every health/utilization field of GPU `index`.
  GpuSample sample(int index) const;

  struct Api;

 private:
  Nvml(void* handle, std::string library, std::unique_ptr<Api> api);
  void* handle_ = nullptr;
  std::string library_;
  std::unique_ptr<Api> api_;
};

// A whole-host snapshot, for topo and preflight.
struct NvmlSnapshot {
  bool available = false;
  std::string message;  // why NVML is unavailable, or "NVML <driver> via <library>"
  std::string driver_version;
  std::vector<GpuSample> gpus;
};
NvmlSnapshot take_nvml_snapshot(const std::string& library);

}  // namespace smddp::tools
