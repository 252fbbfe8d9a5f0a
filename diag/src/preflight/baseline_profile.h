// The `baseline:` section of a profile (expected bus bandwidth per collective
// and size range), validated with the profile; its format and reader are
// smddp::results' (smddp/results/baseline.h), with which smddp-bench gates runs.
#pragma once

#include <string>

namespace YAML {
class Node;
}

namespace smddp::diag {

// UsageError (file, line, key) for a malformed section.
void check_profile_baseline(const YAML::Node& section, const std::string& origin);

}  // namespace smddp::diag
