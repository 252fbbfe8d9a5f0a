// Algorithm selection as data: rules of (collective, scope, memory kind, up
// to bytes, candidates in order), tried top-down, the first that covers the
// call giving the order. A communicator builds its Selector once, in this
// order (docs/engine.md, "Algorithms and selection"):
//   SMDDP_TUNING_FILE's rules;
//   the cost model's table for this job (algorithms/model_table.h): the
//     multi-node choices on the world and on the cross-node groups, ranked
//     by predicted time at setup, never per call;
//   the data rows of selector.cc: measured single-node choices, and a small
//     fallback for when there is no model;
// and SMDDP_ALGORITHM_<COLLECTIVE>=name forces one for the caller's calls.
// Names are resolved to registry rows then, so a call walks pointers.
//
// Tuning file: one rule per line, '#' starts a comment:
//   <collective> <single|multi> <max_bytes|inf> <name>[,<name>...]
#pragma once

#include <cstddef>
#include <optional>
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
  // Only for calls on groups of this kind (the model's rows: world, cross); none: any.
  std::optional<GroupKind> group{};
  std::string source{};  // where the rule comes from, for --explain
  // The model's rows: predicted time of each candidate, in order, at `at_bytes`.
  std::vector<double> predicted_us{};
  size_t at_bytes = 0;
};

// What the model's table is computed for: the communicator's job.
struct JobShape {
  int hosts = 1;
  int ranks_per_host = 1;           // the most ranks on any node
  std::string transport = "none";   // the network transport that opened: fabric, socket, mpi
  bool dedicated_cores = true;      // Placement::cores_to_spare()
  bool cma = false;                 // node-mates may read each other's memory
  std::optional<LinkFigures> link;  // handed in by a tool (CommunicatorOptions::network_link)
  std::optional<LinkFigures> probed;  // the setup probe's (link_probe.h)
};

// The data rows: measured single-node choices and the multi-node fallback
// for when there is no model (selector.cc).
std::vector<SelectionRule> default_rules();
// Throws UsageError naming the file and line on a malformed rule.
std::vector<SelectionRule> parse_tuning(std::string_view text, std::string_view origin);

class Selector {
 public:
  // The data rows, plus SMDDP_TUNING_FILE and SMDDP_ALGORITHM_* overrides;
  // no model.
  static Selector from_environment();
  // And, for a job across nodes, the model's table in front of the data
  // rows, its parameters from SMDDP_MODEL_FILE, else job.link, else the
  // built-in ones for job.transport, their bandwidth the probe's on a slow
  // link (algorithms/model_table.h).
  static Selector from_environment(const JobShape& job);
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
  // `group`: the call's group kind (the model's rows key on it).
  std::span<const Algorithm* const> candidates(Collective c, Scope scope, size_t bytes,
                                               bool cores_to_spare = true,
                                               MemoryKind memory = MemoryKind::Host,
                                               GroupKind group = GroupKind::World) const;

  // The table host calls of `job` would use, by collective and group, with
  // each range's source and the model's predictions (--list-algorithms --explain).
  SelectionTable table(const JobShape& job) const;

 private:
  void force_from_environment();
  struct Resolved {
    Collective collective;
    Scope scope;
    size_t max_bytes;
    bool dedicated_cores;
    MemoryKind memory;
    std::optional<GroupKind> group;
    std::vector<const Algorithm*> candidates;
    size_t rule;  // index into rules_source_: source and predictions
  };
  std::vector<SelectionRule> rules_source_;
  std::vector<Resolved> rules_;
  const Algorithm* forced_[kNumCollectives] = {};
  std::string forced_var_[kNumCollectives];
  std::string parameters_;  // where the model's parameters came from; empty: no model
  int modelled_hosts_ = 0, modelled_ranks_per_host_ = 0;
  std::string ranked_on_;  // model_table::Scale::text()
};

// Throws UsageError unless `a` handles the call's memory and accepts it.
void check_forced(const Algorithm& a, const CallShape& shape);

Scope scope_of(const CallShape& shape);

}  // namespace smddp
