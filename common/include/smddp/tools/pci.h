// PCI bus ids as NVML, NCCL's topology files, hwloc and sysfs write them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace smddp::tools {

// PCI bus id in canonical lower-case "dddd:bb:dd.f"; accepts NVML's
// "00000000:10:1C.0" and bare "10:1c.0". nullopt when malformed.
std::optional<std::string> normalize_busid(std::string_view busid);

}  // namespace smddp::tools
