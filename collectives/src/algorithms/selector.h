// Algorithm selection as data: rules of (collective, scope, memory kind, up
// to bytes, candidates in order). The defaults live in a table in
// selector.cc; a tuning file (SMDDP_TUNING_FILE) adds rules in front of
// them, and SMDDP_ALGORITHM_<COLLECTIVE>=name forces one algorithm. A
// communicator builds its Selector once: names are resolved to registry
// rows then, so a call walks pointers, never compares names.
//
// Tuning file: one rule per line, '#' starts a comment:
//   <collective> <single|multi> <max_bytes|inf> <name>[,<name>...]
#pragma once

#include <cstddef>
#include <span>
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
  // Applies only when every rank has a core of its own (Placement::cores_to_spare).
  bool dedicated_cores = false;
  MemoryKind memory = MemoryKind::Host;  // the buffers' memory the rule is for
};

std::vector<SelectionRule> default_rules();
// Throws UsageError naming the file and line on a malformed rule.
std::vector<SelectionRule> parse_tuning(std::string_view text, std::string_view origin);

class Selector {
 public:
  // Defaults, plus SMDDP_TUNING_FILE and SMDDP_ALGORITHM_* overrides.
  static Selector from_environment();
  // Resolves every name; UsageError for one the registry lacks.
  explicit Selector(const std::vector<SelectionRule>& rules);

  // By the call's collective, group scope, bytes, memory kind and placement.
  // Throws UsageError when a forced algorithm does not exist, does not
  // handle the call's memory, or declines, or when no algorithm accepts.
  const Algorithm& choose(const CallShape& shape, std::string_view forced) const;
  const Algorithm& choose(const Context& ctx, const Group& g, const Call& call,
                          std::string_view forced) const {
    return choose(shape_of(ctx, g, call), forced);
  }
  // The candidates of the first rule that applies, in order (for tests).
  std::span<const Algorithm* const> candidates(Collective c, Scope scope, size_t bytes,
                                               bool cores_to_spare = true,
                                               MemoryKind memory = MemoryKind::Host) const;

 private:
  struct Resolved {
    Collective collective;
    Scope scope;
    size_t max_bytes;
    bool dedicated_cores;
    MemoryKind memory;
    std::vector<const Algorithm*> candidates;
  };
  std::vector<Resolved> rules_;
  const Algorithm* forced_[kNumCollectives] = {};
};

// Throws UsageError unless `a` handles the call's memory and accepts it.
void check_forced(const Algorithm& a, const CallShape& shape);

Scope scope_of(const CallShape& shape);

}  // namespace smddp
