#include "preflight/counter_check.h"

namespace smddp::diag {

CheckResult counter_result(const CounterDeltas& d, const std::string& what) {
  const nlohmann::json values = to_json(d);
  if (d.moved.empty()) {
    return CheckResult::pass(kFabricCountersCheck, "no fabric error counter moved during " + what + " (" +
                                                       std::to_string(d.watched) + " watched)",
                             values);
  }
  return CheckResult::fail(kFabricCountersCheck, "moved during " + what + ": " + moved_text(d), values);
}

void add_counter_result(std::vector<CheckResult>& merged, const std::vector<CheckResult>& local) {
  for (const auto& r : local) {
    if (r.check == kFabricCountersCheck) merged.push_back(r);
  }
}

}  // namespace smddp::diag
