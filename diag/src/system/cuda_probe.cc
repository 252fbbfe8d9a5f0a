#include "system/cuda_probe.h"

#include <algorithm>
#include <cstdlib>

#include "shared/text.h"

#ifdef SMDDP_DIAG_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace smddp::diag {

CudaProbe probe_cuda() {
  CudaProbe p;
#ifdef SMDDP_DIAG_WITH_CUDA
  p.built_with_cuda = true;
  // PCI order, as NVML and nvidia-smi number GPUs (CUDA's default ordinals
  // put the fastest first); the devices are also sorted by bus id below.
  setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
  int n = 0;
  cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) {
    // Any error here means no usable device; whether a GPU is listed at
    // all (NVML, nvidia-smi -L) decides if that is a failure (docs/gpu.md).
    p.message = std::string("CUDA runtime: no device (") + cudaGetErrorString(rc) + ")";
    return p;
  }
  for (int i = 0; i < n; ++i) {
    CudaDevice d;
    d.index = i;
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) == cudaSuccess) {
      d.name = prop.name;
      d.memory_bytes = prop.totalGlobalMem;
    }
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, i) == cudaSuccess) d.busid = normalize_busid(bus).value_or(bus);
    p.devices.push_back(d);
  }
  // The CUDA ordinal need not follow PCI order (CUDA_DEVICE_ORDER may be
  // set otherwise): index = position in bus-id order, like hwloc's and NVML's.
  std::stable_sort(p.devices.begin(), p.devices.end(),
                   [](const CudaDevice& a, const CudaDevice& b) { return a.busid < b.busid; });
  for (size_t i = 0; i < p.devices.size(); ++i) p.devices[i].index = static_cast<int>(i);
  p.message = "CUDA runtime: " + std::to_string(n) + " device(s)";
#else
  p.message = "built without CUDA";
#endif
  return p;
}

#ifdef SMDDP_DIAG_WITH_CUDA
namespace {
std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }
}  // namespace
#endif

CudaVersions cuda_versions() {
  CudaVersions v{"not built with CUDA", "not built with CUDA"};
#ifdef SMDDP_DIAG_WITH_CUDA
  int runtime = 0, driver = 0;
  v.runtime = cudaRuntimeGetVersion(&runtime) == cudaSuccess ? cuda_version_text(runtime) : "unknown";
  // 0 (or an error) when no driver is installed.
  v.driver = cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0 ? cuda_version_text(driver) : "none";
#endif
  return v;
}

}  // namespace smddp::diag
