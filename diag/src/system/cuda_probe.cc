#include "system/cuda_probe.h"

#include "common/text.h"

#ifdef SMDDP_DIAG_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace smddp::diag {

CudaProbe probe_cuda() {
  CudaProbe p;
#ifdef SMDDP_DIAG_WITH_CUDA
  p.built_with_cuda = true;
  int n = 0;
  cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) {
    // Any error here means no usable device (DESIGN.md).
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
  p.message = "CUDA runtime: " + std::to_string(n) + " device(s)";
#else
  p.message = "built without CUDA";
#endif
  return p;
}

}  // namespace smddp::diag
