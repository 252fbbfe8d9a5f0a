// Preflight profiles: YAML files naming the checks to run and their
// thresholds, validated against the check table before any work starts.
//
//   name: p4d.24xlarge
//   description: 8x A100 40GB, 4x EFA
//   checks:
//     gpu_count: {expected: 8}
//     memlock: {min: unlimited}
//     rank_reachability: {}          # defaults
#pragma once

#include <string>
#include <vector>

#include "preflight/checks.h"

namespace smddp::diag {

struct CheckConfig {
  const CheckSpec* spec = nullptr;
  Params params;
};

struct Profile {
  std::string name, description, path;
  std::vector<CheckConfig> checks;  // in check-table order
};

// Directories searched for a profile given by name: SMDDP_PROFILE_DIR, the
// source tree's diag/profiles, <binary>/../share/smddp/profiles, the install prefix.
std::vector<std::string> profile_search_dirs();

// A path (contains '/' or ends in .yaml/.yml) or a name ("p4d.24xlarge").
// Throws UsageError (one line: file, line, key, what is wrong).
Profile load_profile(const std::string& name_or_path);
// Parses YAML text; `origin` names it in messages.
Profile parse_profile(const std::string& text, const std::string& origin);

// Keeps only `only` (when not empty) and drops `skip`. Unknown names, and
// names the profile does not have, are usage errors.
void select_checks(Profile& profile, const std::vector<std::string>& only, const std::vector<std::string>& skip);

}  // namespace smddp::diag
