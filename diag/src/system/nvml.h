// NVML for the diag commands. The one loader is common/'s
// (smddp/tools/nvml.h), named here; which library to load is diag's.
#pragma once

#include <string>

#include "smddp/tools/nvml.h"

namespace smddp::diag {

using tools::GpuSample;
using tools::Nvml;
using tools::NvmlSnapshot;
using tools::take_nvml_snapshot;
using tools::throttle_reason_names;
using tools::throttle_reasons;
using tools::ThrottleReason;

// --nvml-library when given, else SMDDP_NVML_LIBRARY (libnvidia-ml.so.1 by
// default). Throws UsageError when that names a file that cannot be read.
std::string nvml_library(const std::string& option);

}  // namespace smddp::diag
