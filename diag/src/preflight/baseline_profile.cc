#include "preflight/baseline_profile.h"

#include "smddp/results/baseline.h"

namespace smddp::diag {

void check_profile_baseline(const YAML::Node& section, const std::string& origin) {
  (void)results::parse_baseline_section(section, origin);
}

}  // namespace smddp::diag
