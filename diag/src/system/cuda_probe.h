// GPUs as the CUDA runtime sees them, in builds with CUDA (SMDDP_CUDA_ENABLED).
// A second opinion beside NVML: on a host without a driver the runtime's
// error ("CUDA driver version is insufficient ...") is reported as is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace smddp::diag {

struct CudaDevice {
  int index = 0;  // position in PCI bus-id order (not the CUDA ordinal)
  std::string name, busid;
  uint64_t memory_bytes = 0;
};

struct CudaProbe {
  bool built_with_cuda = false;
  std::string message;  // "2 CUDA devices" or why there are none
  std::vector<CudaDevice> devices;
};

CudaProbe probe_cuda();

// The CUDA runtime this process loaded and the CUDA version the driver
// supports ("12.4"); "none" without a driver, "not built with CUDA"
// in builds without it. Neither call touches a device.
struct CudaVersions {
  std::string runtime, driver;
};
CudaVersions cuda_versions();

}  // namespace smddp::diag
