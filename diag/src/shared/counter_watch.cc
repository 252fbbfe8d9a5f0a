#include "shared/counter_watch.h"

namespace smddp::diag {
namespace {

// A delta read back from JSON carries its whole key text in `name`.
std::string key_text(const tools::FabricCounterDelta& m) {
  return m.key.device.empty() ? m.key.name : tools::to_string(m.key);
}

}  // namespace

CounterWatch::CounterWatch(const SystemRoot& root) : root_(root), before_(tools::read_fabric_counters(root.root())) {}

std::optional<CounterDeltas> CounterWatch::deltas() const {
  const tools::FabricCounterSnapshot after = tools::read_fabric_counters(root_.root());
  if (before_.empty() && after.empty()) return std::nullopt;
  return CounterDeltas{after.size(), tools::fabric_counter_deltas(before_, after)};
}

nlohmann::json to_json(const CounterDeltas& d) {
  nlohmann::json moved = nlohmann::json::object();
  for (const auto& m : d.moved) moved[key_text(m)] = m.delta;
  return {{"watched", d.watched}, {"moved", moved}};
}

std::optional<CounterDeltas> counter_deltas_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.value("watched", nlohmann::json()).is_number_unsigned() ||
      !j.value("moved", nlohmann::json()).is_object()) {
    return std::nullopt;
  }
  CounterDeltas d;
  d.watched = j["watched"].get<size_t>();
  for (const auto& [key, delta] : j["moved"].items()) {
    if (!delta.is_number_unsigned()) continue;
    tools::FabricCounterDelta m;
    m.key.name = key;
    m.delta = delta.get<uint64_t>();
    d.moved.push_back(std::move(m));
  }
  return d;
}

std::string moved_text(const CounterDeltas& d) {
  std::string out;
  for (const auto& m : d.moved) {
    out += (out.empty() ? "" : ", ") + key_text(m) + " +" + std::to_string(m.delta);
  }
  return out;
}

}  // namespace smddp::diag
