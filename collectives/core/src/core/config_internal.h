// What the configuration table shares with check() (config_check.cc, in the
// collectives layer, where the algorithm registry and the tuning-file parser
// live).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "smddp/config.h"
#include "smddp/types.h"

namespace smddp::config::detail {

// The row of a concrete name (a pattern row for SMDDP_ALGORITHM_ALLREDUCE).
const Setting* find(std::string_view name);
// The collective a pattern row's concrete name stands for.
std::optional<Collective> collective_of(const Setting& s, std::string_view name);
// What a valid value looks like ("seconds > 0"), for messages and the README.
std::string expectation(const Setting& s);
// "" when `value` is valid for the row, else the one-line message.
std::string problem(const Setting& s, std::string_view name, const std::string& value);
void run_added_checks(std::string_view name, const std::string& value);
// The set variables (name, value) of these users' rows.
std::vector<std::pair<std::string, std::string>> environment_values(unsigned users);
// Set variables with a pattern row's prefix that name no collective.
std::vector<std::string> unknown_pattern_names();
// This process's rank from the launcher's environment, or nullptr.
const char* launcher_rank();

}  // namespace smddp::config::detail
