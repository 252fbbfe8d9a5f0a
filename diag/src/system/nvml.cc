#include "system/nvml.h"

#include "smddp/config.h"

namespace smddp::diag {

std::string nvml_library(const std::string& option) {
  const std::string library = option.empty() ? config::text("SMDDP_NVML_LIBRARY") : option;
  Nvml::check_library_file(library, option.empty() ? "SMDDP_NVML_LIBRARY" : "--nvml-library");
  return library;
}

}  // namespace smddp::diag
