#include "preflight/counter_check.h"

#include <string>

namespace smddp::diag {

CounterWatch::CounterWatch(const SystemRoot& root)
    : root_(root), before_(tools::read_fabric_counters(root.root())) {}

std::optional<CheckResult> CounterWatch::result() const {
  const tools::FabricCounterSnapshot after = tools::read_fabric_counters(root_.root());
  if (before_.empty() && after.empty()) return std::nullopt;
  const auto moved = tools::fabric_counter_deltas(before_, after);
  nlohmann::json values = {{"watched", after.size()}, {"moved", nlohmann::json::object()}};
  if (moved.empty()) {
    return CheckResult::pass(kFabricCountersCheck,
                             "no fabric error counter moved during the checks (" + std::to_string(after.size()) +
                                 " watched)",
                             values);
  }
  std::string list;
  for (const auto& d : moved) {
    values["moved"][tools::to_string(d.key)] = d.delta;
    list += (list.empty() ? "" : ", ") + tools::to_string(d.key) + " +" + std::to_string(d.delta);
  }
  return CheckResult::fail(kFabricCountersCheck, "moved during the checks: " + list, values);
}

void add_counter_result(std::vector<CheckResult>& merged, const std::vector<CheckResult>& local) {
  for (const auto& r : local) {
    if (r.check == kFabricCountersCheck) merged.push_back(r);
  }
}

}  // namespace smddp::diag
