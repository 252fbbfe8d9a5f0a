// Algorithm selection as data: rules of (collective, scope, up to bytes,
// candidates in order). The defaults live in a table in selector.cc; a tuning
// file (SMDDP_TUNING_FILE) adds rules in front of them, and
// SMDDP_ALGORITHM_<COLLECTIVE>=name forces one algorithm.
//
// Tuning file: one rule per line, '#' starts a comment:
//   <collective> <single|multi> <max_bytes|inf> <name>[,<name>...]
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/registry.h"

namespace smddp {

enum class Scope : uint8_t { SingleNode, MultiNode };

struct SelectionRule {
  Collective collective;
  Scope scope;
  size_t max_bytes;
  std::vector<std::string> candidates;
  bool dedicated_cores = false;  // applies only when no rank of the host shares a core
};

std::vector<SelectionRule> default_rules();
// Throws UsageError naming the file and line on a malformed rule.
std::vector<SelectionRule> parse_tuning(std::string_view text, std::string_view origin);

class Selector {
 public:
  // Defaults, plus SMDDP_TUNING_FILE and SMDDP_ALGORITHM_* overrides.
  static Selector from_environment();
  explicit Selector(std::vector<SelectionRule> rules) : rules_(std::move(rules)) {}

  // Throws UsageError when a forced algorithm does not exist or declines.
  const Algorithm& choose(const Context& ctx, const Group& g, const Call& call,
                          std::string_view forced) const;
  // The candidate names for a call, in order (for tests and --list).
  // Per call: a reference into the rules, no copy.
  const std::vector<std::string>& candidates(Collective c, Scope scope, size_t bytes) const;

 private:
  std::vector<SelectionRule> rules_;
  std::string forced_[kNumCollectives];
};

Scope scope_of(const Context& ctx, const Group& g);

}  // namespace smddp
