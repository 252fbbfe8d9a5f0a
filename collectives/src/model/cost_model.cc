#include "smddp/model/cost_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>

#include "smddp/config.h"
#include "smddp/error.h"
#include "smddp/common/input_file.h"

namespace smddp::model {
namespace {

constexpr const char* kFormat = "smddp-model";
constexpr int kVersion = 1;

int index(Tier t, int p) { return static_cast<int>(t) * kParams + p; }

double dot(const Model& m, const Terms& x) {
  double t = 0;
  for (int tier = 0; tier < kTiers; ++tier) {
    for (int p = 0; p < kParams; ++p) t += x[tier * kParams + p] * m.tiers[tier].value[p];
  }
  return t;
}

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
  for (double& v : x) v *= static_cast<double>(s.repeat);
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

double predict_us(const Model& m, const schedule::Schedule& s) { return dot(m, terms(s)); }

double predict_stream_us(const Model& m, const schedule::Schedule& s,
                         const std::vector<schedule::Transfer>& transfers) {
  std::vector<double> step_us(s.steps.size());
  for (size_t i = 0; i < s.steps.size(); ++i) step_us[i] = dot(m, terms(s.steps[i]));
  // Each (step, rank) once: a rank sending two messages in a step spends the
  // step's time once. make() lists a step's transfers together, in order.
  int ranks = 0;
  for (const auto& t : transfers) ranks = std::max({ranks, t.src + 1, t.dst + 1});
  constexpr size_t kNone = ~size_t{0};
  std::vector<size_t> last_send(static_cast<size_t>(ranks), kNone), last_receive(last_send);
  std::vector<double> sending(static_cast<size_t>(ranks), 0), receiving(sending);
  std::vector<bool> listed(s.steps.size(), false);
  for (const auto& t : transfers) {
    if (t.step >= s.steps.size()) continue;
    listed[t.step] = true;
    for (auto [rank, last, total] : {std::tuple{t.src, &last_send, &sending}, {t.dst, &last_receive, &receiving}}) {
      const auto r = static_cast<size_t>(rank);
      if ((*last)[r] == t.step) continue;
      (*last)[r] = t.step;
      (*total)[r] += step_us[t.step];
    }
  }
  double everyone = 0;
  for (size_t i = 0; i < s.steps.size(); ++i) everyone += listed[i] ? 0 : step_us[i];
  double busiest = 0;
  for (size_t r = 0; r < sending.size(); ++r) busiest = std::max({busiest, sending[r], receiving[r]});
  return busiest + everyone;
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

namespace {

// Every key of `obj` must be one of `known`: a misspelled name ("alpah_us",
// "netwrok") would otherwise be ignored and its default used in silence.
void check_keys(const nlohmann::json& obj, const std::vector<std::string>& known, const std::string& where,
                const std::string& origin) {
  for (const auto& [key, value] : obj.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    throw UsageError(origin + ": unknown key '" + key + "' in " + where + "; valid: " + list);
  }
}

// The range of the engine's SMDDP_SHM_SLOT_BYTES (its configuration table):
// a model's schedule setting stands for it.
const config::Setting& shm_slot_setting() {
  for (const auto& s : config::table()) {
    if (s.name == "SMDDP_SHM_SLOT_BYTES") return s;
  }
  throw std::logic_error("config: no SMDDP_SHM_SLOT_BYTES");
}

}  // namespace

std::string shm_slot_problem(uint64_t bytes) {
  const config::Setting& slot = shm_slot_setting();
  if (bytes >= static_cast<uint64_t>(slot.lo) && bytes <= static_cast<uint64_t>(slot.hi) && bytes % slot.multiple == 0) {
    return "";
  }
  return "must be a byte count " + std::to_string(slot.lo) + ".." + std::to_string(slot.hi) + ", a multiple of " +
         std::to_string(slot.multiple) + " (as SMDDP_SHM_SLOT_BYTES)";
}

Model from_json(const nlohmann::json& j, const std::string& origin) {
  auto fail = [&](const std::string& why) { throw UsageError(origin + ": " + why); };
  auto member = [](const nlohmann::json& obj, const char* key) -> const nlohmann::json* {
    const auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  };
  if (!j.is_object()) fail("not an smddp-model file (not a JSON object)");
  const auto* format = member(j, "format");
  if (!format || !format->is_string() || format->get<std::string>() != kFormat) {
    fail("not an smddp-model file (format is not \"smddp-model\")");
  }
  const auto* version = member(j, "version");
  if (!version || !version->is_number_integer() || version->get<int64_t>() != kVersion) {
    fail("version " + (version ? version->dump().substr(0, 40) : std::string("(none)")) + " is not 1");
  }
  check_keys(j, {"format", "version", "equation", "tiers", "schedule", "fit"}, "the document", origin);
  const auto* tiers = member(j, "tiers");
  if (!tiers || !tiers->is_object()) fail("no \"tiers\" object");
  std::vector<std::string> tier_names, param_names(kParamNames.begin(), kParamNames.end());
  for (Tier t : {Tier::Shm, Tier::Network}) tier_names.emplace_back(schedule::to_string(t));
  check_keys(*tiers, tier_names, "tiers", origin);
  std::vector<std::string> tier_keys = param_names;
  tier_keys.insert(tier_keys.end(), {"bandwidth_gbps", "undetermined"});
  Model m;
  for (Tier t : {Tier::Shm, Tier::Network}) {
    const std::string name(schedule::to_string(t));
    const auto* jt = member(*tiers, name.c_str());
    if (!jt || !jt->is_object()) fail("no tier \"" + name + "\"");
    check_keys(*jt, tier_keys, "tiers." + name, origin);
    const auto* undetermined = member(*jt, "undetermined");
    if (undetermined && !undetermined->is_object()) fail("tiers." + name + ".undetermined must be an object");
    if (undetermined) check_keys(*undetermined, param_names, "tiers." + name + ".undetermined", origin);
    TierParams& tp = m.tier(t);
    for (int p = 0; p < kParams; ++p) {
      const auto* v = member(*jt, kParamNames[p]);
      if (!v || !v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < 0) {
        fail("tiers." + name + "." + kParamNames[p] + " must be a number >= 0");
      }
      tp.value[p] = v->get<double>();
      const auto* note = undetermined ? member(*undetermined, kParamNames[p]) : nullptr;
      tp.determined[p] = note == nullptr;
      if (note) tp.note[p] = note->is_string() ? note->get<std::string>() : "no data";
    }
  }
  if (const auto* s = member(j, "schedule")) {
    if (!s->is_object()) fail("\"schedule\" must be an object");
    check_keys(*s, {"shm_slot_bytes", "dedicated_cores", "cma"}, "schedule", origin);
    if (const auto* v = member(*s, "shm_slot_bytes")) {
      // The engine's own bounds: a tiny slot would make a schedule of
      // billions of steps, a prediction without end.
      const std::string why = v->is_number_unsigned() ? shm_slot_problem(v->get<uint64_t>()) : shm_slot_problem(0);
      if (!why.empty()) fail("schedule.shm_slot_bytes " + why);
      m.options.shm_slot_bytes = v->get<uint64_t>();
    }
    for (auto [key, field] : {std::pair{"dedicated_cores", &m.options.dedicated_cores}, {"cma", &m.options.cma}}) {
      if (const auto* v = member(*s, key)) {
        if (!v->is_boolean()) fail(std::string("schedule.") + key + " must be true or false");
        *field = v->get<bool>();
      }
    }
  }
  if (const auto* fit = member(j, "fit")) m.fit_info = *fit;
  return m;
}

Model load(const std::string& path) {
  // The engine's bounded reader (SMDDP_MODEL_FILE is read here too): a
  // FIFO, device or huge file is refused, never waited on or loaded.
  std::string text;
  if (const std::string why = common::read_bounded_file(path, common::kMaxInputBytes, &text); !why.empty()) {
    throw UsageError(path + ": cannot read: " + why);
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw UsageError(path + ": not valid JSON");
  }
  return from_json(j, path);
}

}  // namespace smddp::model
