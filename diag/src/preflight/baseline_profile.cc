#include "preflight/baseline_profile.h"

#include "baseline.h"

namespace smddp::diag {

void check_profile_baseline(const YAML::Node& section, const std::string& origin) {
  (void)bench::parse_baseline_section(section, origin);
}

}  // namespace smddp::diag
