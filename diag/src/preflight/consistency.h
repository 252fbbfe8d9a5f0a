// The consistency comparison of preflight (pure: no MPI, no I/O). Each node
// reports its versions (facts, node_facts.h) and each of its ranks its
// NCCL_* / FI_* / SMDDP_* / RDMAV_* settings; a field on which the nodes
// differ names the minority nodes (the most common value is the reference;
// a tie names every side), and a setting on which one node's ranks differ
// names that node. docs/diag.md, "Consistency".
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace smddp::diag {

// The failure class of every consistency finding, in the check's values as
// "code": the one place a failure-code table maps from.
inline constexpr std::string_view kConfigCode = "config";

using Settings = std::map<std::string, std::string>;  // NAME -> value
using Facts = std::map<std::string, std::string>;     // field -> value

struct RankSettings {
  int rank = 0;
  Settings env;
};

struct NodeEntry {
  std::string label;
  std::optional<Facts> facts;       // nullopt: the node sent none
  std::vector<RankSettings> ranks;  // every rank of the node that reported
};

struct Finding {
  std::string field;     // "nccl", or "env.NCCL_PROTO" for a setting
  std::string value;     // this node's value ("unset" for a setting not set)
  std::string expected;  // the reference, or the golden file's pattern
  std::string text;      // the phrase the report prints
};

// A field name for a setting: "env." + NAME.
std::string setting_field(std::string_view name);
// "nccl 2.18.1", "NCCL_PROTO=LL128", "NCCL_PROTO unset".
std::string describe(std::string_view field, const std::optional<std::string>& value);

// One node as compared: its facts and the settings its ranks agree on
// (fields "env.NAME"); `disputed` holds the settings they do not agree on,
// which are reported per node and left out of the comparison across nodes.
struct NodeView {
  std::map<std::string, std::string> values;
  std::set<std::string> disputed;  // setting fields
  bool has_facts = false;
  // nullopt: not compared (no facts, or disputed); else the value, or nullopt-inside for an unset setting.
  std::optional<std::optional<std::string>> get(const std::string& field) const;
};

// `ignore`: globs of fact names or setting names never compared.
NodeView resolve(const NodeEntry& node, const std::vector<std::string>& ignore, std::vector<Finding>* rank_findings);

// Per node, what differs from the other nodes (and its own ranks' disputes).
std::vector<std::vector<Finding>> compare_nodes(const std::vector<NodeEntry>& nodes, const std::vector<std::string>& ignore);

// Every setting field any node (or rank) has.
std::set<std::string> setting_fields(const std::vector<NodeView>& views);

}  // namespace smddp::diag
