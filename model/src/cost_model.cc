#include "smddp/model/cost_model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "smddp/error.h"
#include "smddp/tools/input_file.h"

namespace smddp::model {
namespace {

constexpr const char* kFormat = "smddp-model";
constexpr int kVersion = 1;

int index(Tier t, int p) { return static_cast<int>(t) * kParams + p; }

}  // namespace

bool TierParams::any_data() const {
  for (int p = 0; p < kParams; ++p) {
    if (determined[p] || note[p] != "no data") return true;
  }
  return false;
}

Terms terms(const schedule::Step& s) {
  Terms x{};
  const double flows = s.tier == Tier::Network ? s.flows : 1;
  x[index(s.tier, 0)] = static_cast<double>(s.messages);
  x[index(s.tier, 1)] = static_cast<double>(s.bytes) * flows;
  x[index(s.tier, 2)] = static_cast<double>(s.reduced);
  x[index(s.tier, 3)] = 1;
  return x;
}

Terms terms(const schedule::Schedule& s) {
  Terms x{};
  for (const auto& step : s.steps) {
    const Terms t = terms(step);
    for (size_t i = 0; i < x.size(); ++i) x[i] += t[i];
  }
  return x;
}

double predict_us(const Model& m, const schedule::Schedule& s) {
  const Terms x = terms(s);
  double t = 0;
  for (int tier = 0; tier < kTiers; ++tier) {
    for (int p = 0; p < kParams; ++p) t += x[tier * kParams + p] * m.tiers[tier].value[p];
  }
  return t;
}

std::vector<std::string> undetermined_tiers(const Model& m, const schedule::Schedule& s) {
  std::vector<std::string> out;
  for (Tier t : {Tier::Shm, Tier::Network}) {
    bool used = false;
    for (const auto& step : s.steps) used |= step.tier == t;
    if (used && !m.tier(t).any_data()) out.emplace_back(schedule::to_string(t));
  }
  return out;
}

std::string scale_problem(int64_t hosts, int64_t ranks_per_host, uint64_t bytes, const schedule::Options& options) {
  if (hosts < 1 || ranks_per_host < 1) return "hosts and ranks per host must be >= 1";
  if (hosts > kMaxRanks || ranks_per_host > kMaxRanks || hosts * ranks_per_host > kMaxRanks) {
    return std::to_string(hosts) + " hosts x " + std::to_string(ranks_per_host) + " ranks is more than the " +
           std::to_string(kMaxRanks) + " ranks the model draws schedules for";
  }
  const uint64_t slot = std::max<uint64_t>(options.shm_slot_bytes, 1);
  if (bytes / slot > kMaxShmSteps) {
    return std::to_string(bytes) + " bytes in slots of " + std::to_string(slot) + " bytes is more than the " +
           std::to_string(kMaxShmSteps) + " shared-memory steps the model draws";
  }
  return "";
}

nlohmann::json to_json(const Model& m) {
  nlohmann::json tiers = nlohmann::json::object();
  for (Tier t : {Tier::Shm, Tier::Network}) {
    const TierParams& tp = m.tier(t);
    nlohmann::json j = nlohmann::json::object();
    nlohmann::json undetermined = nlohmann::json::object();
    for (int p = 0; p < kParams; ++p) {
      j[kParamNames[p]] = tp.value[p];
      if (!tp.determined[p]) undetermined[kParamNames[p]] = tp.note[p];
    }
    // For people: the bandwidth beta stands for, in GB/s (1e9 bytes/s).
    j["bandwidth_gbps"] = tp.value[1] > 0 ? 1e-3 / tp.value[1] : 0.0;
    j["undetermined"] = undetermined;
    tiers[std::string(schedule::to_string(t))] = j;
  }
  return {{"format", kFormat},
          {"version", kVersion},
          {"equation", "t_us = sum over steps: overhead_us + messages*alpha_us + bytes*flows*beta_us_per_byte + "
                       "reduced*gamma_us_per_byte (flows = 1 in shm)"},
          {"tiers", tiers},
          {"schedule", {{"shm_slot_bytes", m.options.shm_slot_bytes},
                        {"dedicated_cores", m.options.dedicated_cores},
                        {"cma", m.options.cma}}},
          {"fit", m.fit_info}};
}

Model from_json(const nlohmann::json& j, const std::string& origin) {
  auto fail = [&](const std::string& why) { throw UsageError(origin + ": " + why); };
  if (!j.is_object() || j.value("format", "") != kFormat) fail("not an smddp-model file (format is not \"smddp-model\")");
  if (j.value("version", 0) != kVersion) fail("version " + j.value("version", nlohmann::json()).dump() + " is not 1");
  if (!j.contains("tiers") || !j["tiers"].is_object()) fail("no \"tiers\" object");
  Model m;
  for (Tier t : {Tier::Shm, Tier::Network}) {
    const std::string name(schedule::to_string(t));
    if (!j["tiers"].contains(name) || !j["tiers"][name].is_object()) fail("no tier \"" + name + "\"");
    const auto& jt = j["tiers"][name];
    const auto undetermined = jt.value("undetermined", nlohmann::json::object());
    TierParams& tp = m.tier(t);
    for (int p = 0; p < kParams; ++p) {
      const auto& v = jt.contains(kParamNames[p]) ? jt[kParamNames[p]] : nlohmann::json();
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
        fail("tiers." + name + "." + kParamNames[p] + " must be a number >= 0");
      }
      tp.value[p] = v.get<double>();
      tp.determined[p] = !undetermined.contains(kParamNames[p]);
      if (!tp.determined[p]) {
        tp.note[p] = undetermined[kParamNames[p]].is_string() ? undetermined[kParamNames[p]].get<std::string>() : "no data";
      }
    }
  }
  if (j.contains("schedule") && j["schedule"].is_object()) {
    const auto& s = j["schedule"];
    try {
      m.options.shm_slot_bytes = s.value("shm_slot_bytes", m.options.shm_slot_bytes);
      m.options.dedicated_cores = s.value("dedicated_cores", m.options.dedicated_cores);
      m.options.cma = s.value("cma", m.options.cma);
    } catch (const nlohmann::json::exception&) {
      fail("\"schedule\" holds a value of the wrong type");
    }
    if (m.options.shm_slot_bytes < kMinSlotBytes || m.options.shm_slot_bytes > kMaxSlotBytes) {
      fail("schedule.shm_slot_bytes must be " + std::to_string(kMinSlotBytes) + ".." + std::to_string(kMaxSlotBytes) +
           " (SMDDP_SHM_SLOT_BYTES' range), not " + std::to_string(m.options.shm_slot_bytes));
    }
  }
  if (j.contains("fit")) m.fit_info = j["fit"];
  return m;
}

Model load(const std::string& path) {
  const std::string text = tools::read_input_file(path, path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw UsageError(path + ": not valid JSON");
  }
  return from_json(j, path);
}

}  // namespace smddp::model
