// Golden files: what every node of a cluster is expected to run, learned
// from a healthy cluster (smddp-diag golden learn) and checked by
// preflight --golden. A small JSON document:
//
//   {"smddp_golden": 1,
//    "fields": {"nccl": "2.21.*", "kernel": "6.1.*"},         facts (node_facts.h), globs
//    "env": {"FI_PROVIDER": "efa", "NCCL_DEBUG": ["WARN", null]}}
//
// A value is a glob or a list of alternatives; null is "unset". Facts not
// listed are not checked; a setting not listed must be unset.
// docs/diag.md, "Golden files".
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "preflight/consistency.h"

namespace smddp::diag {

// Alternatives: a glob each, or nullopt for unset.
using GoldenValue = std::vector<std::optional<std::string>>;

struct Golden {
  std::string origin;  // the file, for messages
  std::map<std::string, GoldenValue> fields, env;
};

// A golden file is small; anything larger is refused.
inline constexpr size_t kMaxGoldenBytes = size_t{1} << 20;

// Throws UsageError "golden 'ORIGIN': what is wrong" (one line).
Golden parse_golden(const std::string& text, const std::string& origin);
// Bounded read (smddp/tools/input_file.h), then parse_golden.
Golden load_golden(const std::string& path);

bool golden_matches(const GoldenValue& want, const std::optional<std::string>& value);
std::string golden_text(const GoldenValue& want);  // "2.21.*", "WARN or unset"

// What differs from the golden file on one node.
std::vector<Finding> compare_golden(const Golden& golden, const NodeView& node);

// The golden file of nodes that agree: every fact, every setting set;
// facts matching `ignore` are left out, settings matching it may be
// anything or unset (["*", null]).
// Throws smddp::Error naming the first disagreement when they do not.
std::string learn_golden(const std::vector<NodeEntry>& nodes, const std::vector<std::string>& ignore);

}  // namespace smddp::diag
