// The cost model: per tier (shared memory inside a node, the network between
// nodes) a latency per message, an inverse bandwidth, a reduction cost per
// byte and an overhead per step, applied to an algorithm's step schedule
// (smddp/schedule.h):
//
//   t = sum over steps s of  overhead[T] + messages_s * alpha[T]
//                            + bytes_s * flows_s(T) * beta[T] + reduced_s * gamma[T]
//
// with T the step's tier and flows_s(T) its flows per link on the network
// (the link is shared) and 1 in shared memory (each core copies its own).
// Times in microseconds, sizes in bytes. Part of the engine (smddp::collectives):
// what smddp-model fits and writes, what smddp::results predicts rows with,
// and what the selector ranks algorithms by (SMDDP_MODEL_FILE, docs/engine.md).
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "smddp/schedule.h"

namespace smddp::model {

using schedule::Tier;
inline constexpr int kTiers = 2;
inline constexpr int kParams = 4;  // per tier, in this order:
inline constexpr std::array<const char*, kParams> kParamNames = {"alpha_us", "beta_us_per_byte",
                                                                  "gamma_us_per_byte", "overhead_us"};

struct TierParams {
  std::array<double, kParams> value{};          // alpha, beta, gamma, overhead
  std::array<bool, kParams> determined{};       // the data fixed it
  std::array<std::string, kParams> note;        // why not: "no data", "not separable from beta_us_per_byte"
  bool any_data() const;
};

struct Model {
  std::array<TierParams, kTiers> tiers;  // [Tier::Shm], [Tier::Network]
  schedule::Options options;             // the schedule settings the fit used
  nlohmann::json fit_info = nlohmann::json::object();  // rows, files, errors (informative)

  const TierParams& tier(Tier t) const { return tiers[static_cast<int>(t)]; }
  TierParams& tier(Tier t) { return tiers[static_cast<int>(t)]; }
};

// The terms of one step or schedule: t = sum over tier and param of x * value.
using Terms = std::array<double, kTiers * kParams>;
Terms terms(const schedule::Step& s);
Terms terms(const schedule::Schedule& s);
double predict_us(const Model& m, const schedule::Schedule& s);
// The time per call in a run of back-to-back calls whose data flows one way
// (from a root or to it): a rank starts its next call once its own part of
// this one is done, so the calls overlap, and each rank's sending and its
// receiving are the resources that set the pace. Per rank, the steps it
// sends in and the steps it receives in, each charged the step's time; the
// larger sum, at the busiest rank. A step with no transfer listed (a
// shared-memory copy) counts for every rank. Never more than predict_us.
// `transfers`: what make() listed for `s`.
double predict_stream_us(const Model& m, const schedule::Schedule& s,
                         const std::vector<schedule::Transfer>& transfers);
// Tiers a schedule uses that the model has no data for ("network").
std::vector<std::string> undetermined_tiers(const Model& m, const schedule::Schedule& s);

// How large a schedule the model draws (docs/model.md#bounds). Schedules are
// drawn rank by rank and step by step: their time and memory grow as the
// square of the ranks (4096 ranks: about 2 GB and half a minute for every
// collective at one size) and with bytes / shm_slot_bytes shared-memory
// steps. Asked for more, by a flag or by a file, the tools refuse.
inline constexpr int64_t kMaxRanks = 4096;
inline constexpr uint64_t kMaxShmSteps = uint64_t{1} << 20;
// "" when `bytes` is a shared-memory slot size the engine takes (the range
// and multiple of SMDDP_SHM_SLOT_BYTES in its configuration table), else
// why: a model file's schedule.shm_slot_bytes and fit --shm-slot-bytes.
std::string shm_slot_problem(uint64_t bytes);

// "" when a schedule of hosts x ranks_per_host ranks at `bytes` is inside
// those bounds, else why, naming the bound.
std::string scale_problem(int64_t hosts, int64_t ranks_per_host, uint64_t bytes, const schedule::Options& options);

// smddp-model's JSON file (docs/model.md). from_json throws UsageError.
nlohmann::json to_json(const Model& m);
Model from_json(const nlohmann::json& j, const std::string& origin);
Model load(const std::string& path);

}  // namespace smddp::model
