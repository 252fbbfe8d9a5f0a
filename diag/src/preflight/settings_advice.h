// Settings that current aws-ofi-nccl and NCCL documentation call obsolete,
// unneeded or harmful: ONE table (setting, value, condition, advice,
// source). preflight's consistency check warns about each one a node sets
// (docs/diag.md, "Consistency"); a warning never makes a node unhealthy.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace smddp::diag {

enum class AdviceWhen {
  Always,         // whatever the node has
  WithOfiPlugin,  // only where the aws-ofi-nccl plugin was found (EFA-specific advice)
};

struct SettingAdvice {
  std::string_view setting;  // a variable name; a glob (RDMAV_*) is tried after the exact names
  std::string_view value;    // a glob, case-insensitive ("*": any value)
  AdviceWhen when;
  std::string_view advice;
  std::string_view source;   // the document that says so (URL)
};

const std::vector<SettingAdvice>& settings_advice();

struct AdviceHit {
  std::string setting, value;
  const SettingAdvice* row = nullptr;
};

// The first matching row for each setting of `env`; exact names before
// globs, rows in table order. Settings in name order.
std::vector<AdviceHit> advise(const std::map<std::string, std::string>& env, bool ofi_plugin);

// fnmatch(3) globs (*, ?, [...]); `fold`: ignore ASCII case.
bool glob_match(std::string_view pattern, std::string_view text, bool fold = false);

}  // namespace smddp::diag
