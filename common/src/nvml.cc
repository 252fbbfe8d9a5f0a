// The few NVML entry points we use, declared here from NVML's documented ABI
// (nvml.h is not installed on the build machines).
#include "smddp/tools/nvml.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <fmt/format.h>

#include "smddp/error.h"
#include "smddp/tools/pci.h"

namespace smddp::tools {
namespace {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kNotSupported = 3;
constexpr nvmlReturn_t kInsufficientSize = 7;
constexpr int kTemperatureGpu = 0;       // NVML_TEMPERATURE_GPU
constexpr int kMemoryErrorUncorrected = 1;  // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr int kVolatileEcc = 0;          // NVML_VOLATILE_ECC
constexpr int kAggregateEcc = 1;         // NVML_AGGREGATE_ECC
constexpr int kRetiredSbe = 0;           // NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
constexpr int kRetiredDbe = 1;           // NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR

struct PciInfo {  // nvmlPciInfo_t (v3)
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
struct Utilization {  // nvmlUtilization_t
  unsigned gpu, memory;
};
struct Memory {  // nvmlMemory_t (v1)
  unsigned long long total, free, used;
};

}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*pci)(nvmlDevice_t, PciInfo*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*ecc)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
  nvmlReturn_t (*retired)(nvmlDevice_t, int, unsigned*, unsigned long long*) = nullptr;
  nvmlReturn_t (*retired_pending)(nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*remapped)(nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*throttle)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, Utilization*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, Memory*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*compute_capability)(nvmlDevice_t, int*, int*) = nullptr;

  std::string error(nvmlReturn_t rc) const {
    const char* s = error_string ? error_string(rc) : nullptr;
    return s ? std::string(s) : fmt::format("NVML error {}", rc);
  }
};

const std::vector<ThrottleReason>& throttle_reasons() {
  static const std::vector<ThrottleReason> reasons = {
      {"gpu_idle", 0x1},
      {"applications_clocks_setting", 0x2},
      {"sw_power_cap", 0x4},
      {"hw_slowdown", 0x8},
      {"sync_boost", 0x10},
      {"sw_thermal_slowdown", 0x20},
      {"hw_thermal_slowdown", 0x40},
      {"hw_power_brake_slowdown", 0x80},
      {"display_clock_setting", 0x100},
  };
  return reasons;
}

std::vector<std::string> throttle_reason_names(uint64_t mask) {
  std::vector<std::string> names;
  for (const auto& r : throttle_reasons()) {
    if (mask & r.bit) names.emplace_back(r.name);
  }
  return names;
}

void Nvml::check_library_file(const std::string& library, std::string_view source) {
  if (library.find('/') == std::string::npos) return;  // a soname: the loader searches
  if (access(library.c_str(), R_OK) != 0) throw UsageError(std::string(source) + " '" + library + "' cannot be read");
}

Nvml::Nvml(void* handle, std::string library, std::unique_ptr<Api> api)
    : handle_(handle), library_(std::move(library)), api_(std::move(api)) {}

Nvml::~Nvml() {
  if (api_ && api_->shutdown) api_->shutdown();
  if (handle_) dlclose(handle_);
}

std::unique_ptr<Nvml> Nvml::open(const std::string& library, std::string* why_not) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    *why_not = err ? err : (library + ": cannot be loaded");
    return nullptr;
  }
  auto api = std::make_unique<Api>();
  auto sym = [&](auto& fn, const char* name) { fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name)); };
  sym(api->init, "nvmlInit_v2");
  sym(api->shutdown, "nvmlShutdown");
  sym(api->error_string, "nvmlErrorString");
  sym(api->driver_version, "nvmlSystemGetDriverVersion");
  sym(api->count, "nvmlDeviceGetCount_v2");
  sym(api->handle, "nvmlDeviceGetHandleByIndex_v2");
  sym(api->name, "nvmlDeviceGetName");
  sym(api->uuid, "nvmlDeviceGetUUID");
  sym(api->pci, "nvmlDeviceGetPciInfo_v3");
  sym(api->temperature, "nvmlDeviceGetTemperature");
  sym(api->ecc, "nvmlDeviceGetTotalEccErrors");
  sym(api->retired, "nvmlDeviceGetRetiredPages");
  sym(api->retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
  sym(api->remapped, "nvmlDeviceGetRemappedRows");
  sym(api->throttle, "nvmlDeviceGetCurrentClocksThrottleReasons");
  sym(api->utilization, "nvmlDeviceGetUtilizationRates");
  sym(api->memory, "nvmlDeviceGetMemoryInfo");
  sym(api->power, "nvmlDeviceGetPowerUsage");
  sym(api->compute_capability, "nvmlDeviceGetCudaComputeCapability");
  if (!api->init || !api->count || !api->handle) {
    dlclose(handle);
    *why_not = library + ": not an NVML library (nvmlInit_v2, nvmlDeviceGetCount_v2 or "
                         "nvmlDeviceGetHandleByIndex_v2 missing)";
    return nullptr;
  }
  nvmlReturn_t rc = api->init();
  if (rc != kSuccess) {
    *why_not = "nvmlInit failed: " + api->error(rc);
    api->shutdown = nullptr;  // nothing to shut down
    dlclose(handle);
    return nullptr;
  }
  return std::unique_ptr<Nvml>(new Nvml(handle, library, std::move(api)));
}

std::string Nvml::driver_version() const {
  char buf[96] = {};
  if (!api_->driver_version || api_->driver_version(buf, sizeof buf) != kSuccess) return "";
  return buf;
}

int Nvml::device_count() const {
  unsigned n = 0;
  nvmlReturn_t rc = api_->count(&n);
  if (rc != kSuccess) throw Error("nvmlDeviceGetCount: " + api_->error(rc));
  return static_cast<int>(n);
}

GpuSample Nvml::sample(int index) const {
  GpuSample g;
  g.index = index;
  nvmlDevice_t dev = nullptr;
  nvmlReturn_t rc = api_->handle(static_cast<unsigned>(index), &dev);
  if (rc != kSuccess) {
    g.errors.push_back("nvmlDeviceGetHandleByIndex: " + api_->error(rc));
    return g;
  }
  // Calls one NVML query: true on success; NOT_SUPPORTED and a missing symbol
  // are silent, anything else is recorded.
  auto call = [&](const char* what, auto fn, auto... args) {
    if (!fn) return false;
    nvmlReturn_t r = fn(dev, args...);
    if (r == kSuccess) return true;
    if (r != kNotSupported) g.errors.push_back(std::string(what) + ": " + api_->error(r));
    return false;
  };
  char text[96] = {};
  if (call("nvmlDeviceGetName", api_->name, text, static_cast<unsigned>(sizeof text))) g.name = text;
  char uuid[96] = {};
  if (call("nvmlDeviceGetUUID", api_->uuid, uuid, static_cast<unsigned>(sizeof uuid))) g.uuid = uuid;
  PciInfo pci{};
  if (call("nvmlDeviceGetPciInfo", api_->pci, &pci)) {
    g.busid = normalize_busid(pci.bus_id).value_or(pci.bus_id);
  }
  int major = 0, minor = 0;
  if (call("nvmlDeviceGetCudaComputeCapability", api_->compute_capability, &major, &minor)) g.sm = major * 10 + minor;
  unsigned u = 0;
  if (call("nvmlDeviceGetTemperature", api_->temperature, kTemperatureGpu, &u)) g.temperature_c = u;
  unsigned long long ull = 0;
  if (call("nvmlDeviceGetTotalEccErrors", api_->ecc, kMemoryErrorUncorrected, kVolatileEcc, &ull)) {
    g.ecc_uncorrected_volatile = ull;
  }
  if (call("nvmlDeviceGetTotalEccErrors", api_->ecc, kMemoryErrorUncorrected, kAggregateEcc, &ull)) {
    g.ecc_uncorrected_aggregate = ull;
  }
  // Retired pages: asking with a zero-sized buffer returns the count
  // (INSUFFICIENT_SIZE when there are some).
  for (int cause : {kRetiredSbe, kRetiredDbe}) {
    if (!api_->retired) break;
    unsigned count = 0;
    nvmlReturn_t r = api_->retired(dev, cause, &count, nullptr);
    if (r == kSuccess || r == kInsufficientSize) {
      (cause == kRetiredSbe ? g.retired_pages_sbe : g.retired_pages_dbe) = count;
    } else if (r != kNotSupported) {
      g.errors.push_back("nvmlDeviceGetRetiredPages: " + api_->error(r));
    }
  }
  int pending = 0;
  if (call("nvmlDeviceGetRetiredPagesPendingStatus", api_->retired_pending, &pending)) {
    g.retired_pages_pending = pending != 0;
  }
  unsigned corr = 0, unc = 0, remap_pending = 0, remap_failed = 0;
  if (call("nvmlDeviceGetRemappedRows", api_->remapped, &corr, &unc, &remap_pending, &remap_failed)) {
    g.remapped_rows_correctable = corr;
    g.remapped_rows_uncorrectable = unc;
    g.remap_pending = remap_pending != 0;
    g.remap_failed = remap_failed != 0;
  }
  if (call("nvmlDeviceGetCurrentClocksThrottleReasons", api_->throttle, &ull)) g.throttle_reasons = ull;
  Utilization util{};
  if (call("nvmlDeviceGetUtilizationRates", api_->utilization, &util)) g.utilization_ratio = util.gpu / 100.0;
  Memory mem{};
  if (call("nvmlDeviceGetMemoryInfo", api_->memory, &mem)) {
    g.memory_total_bytes = mem.total;
    g.memory_used_bytes = mem.used;
  }
  if (call("nvmlDeviceGetPowerUsage", api_->power, &u)) g.power_watts = u / 1000.0;
  return g;
}

NvmlSnapshot take_nvml_snapshot(const std::string& library) {
  NvmlSnapshot snap;
  std::string why;
  auto nvml = Nvml::open(library, &why);
  if (!nvml) {
    snap.message = "NVML not available (" + why + ")";
    return snap;
  }
  snap.driver_version = nvml->driver_version();
  int n = 0;
  try {
    n = nvml->device_count();
  } catch (const Error& e) {
    snap.message = std::string("NVML failed: ") + e.what();
    return snap;
  }
  snap.available = true;
  for (int i = 0; i < n; ++i) snap.gpus.push_back(nvml->sample(i));
  snap.message = fmt::format("NVML via {}{}", library,
                             snap.driver_version.empty() ? "" : ", driver " + snap.driver_version);
  return snap;
}

}  // namespace smddp::tools
