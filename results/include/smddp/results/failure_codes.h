// The failure codes: one table (results/src/failure_codes.cc) that every
// verdict of smddp-diag (preflight checks, isolate, ras) and smddp-bench
// (its gates, #wrong, -B) names a row of. A code is stable: alert rules,
// Slurm drain reasons (`smddp:CODE ...`), Kubernetes labels and taints and
// metric labels carry it. Its action class says what an operator's
// automation does; docs/diag.md, "Failure codes", lists the rows and a unit
// test keeps that list equal to this table. `smddp-diag codes --json`
// prints it, so scripts never keep a second copy.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace smddp::results {

// Ordered by how far the action goes: a node with several failures takes
// its furthest one (most_severe).
enum class Action { None, ReRun, Config, Escalate, Reboot, Replace };

std::string_view to_string(Action a);  // "none", "re-run", "config", "escalate", "reboot", "replace"
std::optional<Action> parse_action(std::string_view text);

// What the action means to the schedulers (one place for both):
struct ActionTraits {
  Action action;
  std::string_view meaning;
  bool drain;                 // Slurm: the prolog drains the node
  std::string_view taint_key; // Kubernetes: the NoSchedule taint (value: the code); empty: none
};
std::span<const ActionTraits> action_traits();
const ActionTraits& traits(Action a);

struct FailureCode {
  std::string_view code;  // SMDDP-AREA-WHAT: upper-case letters, digits and '-'
  Action action;
  std::string_view remediation;  // one line
};

// The codes named in the sources (a misspelt constant does not compile).
namespace code {
inline constexpr std::string_view kPreflightCheckError = "SMDDP-PREFLIGHT-CHECK-ERROR";
inline constexpr std::string_view kPreflightNoResult = "SMDDP-PREFLIGHT-NO-RESULT";
inline constexpr std::string_view kPreflightAllreduceWrong = "SMDDP-PREFLIGHT-ALLREDUCE-WRONG";
inline constexpr std::string_view kConfigMismatch = "SMDDP-CONFIG-MISMATCH";
inline constexpr std::string_view kFabricCounters = "SMDDP-PREFLIGHT-FABRIC-COUNTERS";
inline constexpr std::string_view kIsolateSlowNode = "SMDDP-ISOLATE-SLOW-NODE";
inline constexpr std::string_view kIsolateSlowLink = "SMDDP-ISOLATE-SLOW-LINK";
inline constexpr std::string_view kIsolateSlowGroup = "SMDDP-ISOLATE-SLOW-GROUP";
inline constexpr std::string_view kIsolateUnreachable = "SMDDP-ISOLATE-UNREACHABLE";
inline constexpr std::string_view kIsolateProbeFailed = "SMDDP-ISOLATE-PROBE-FAILED";
inline constexpr std::string_view kIsolateCorruption = "SMDDP-ISOLATE-CORRUPTION";
inline constexpr std::string_view kIsolateCorruptionUnplaced = "SMDDP-ISOLATE-CORRUPTION-UNPLACED";
inline constexpr std::string_view kBenchBelowThreshold = "SMDDP-BENCH-BELOW-THRESHOLD";
inline constexpr std::string_view kBenchBelowBaseline = "SMDDP-BENCH-BELOW-BASELINE";
inline constexpr std::string_view kBenchNotJudged = "SMDDP-BENCH-NOT-JUDGED";
inline constexpr std::string_view kBenchWrong = "SMDDP-BENCH-WRONG";
inline constexpr std::string_view kBenchBitwise = "SMDDP-BENCH-BITWISE";
}  // namespace code

std::span<const FailureCode> failure_codes();
const FailureCode* find_failure_code(std::string_view code);
// The row of a code the sources name; throws smddp::Error for one that is
// not in the table (a bug: failure_codes_test covers every named code).
const FailureCode& failure_code(std::string_view code);
// SMDDP- then upper-case words of letters and digits joined by '-'.
bool well_formed_code(std::string_view code);
Action most_severe(Action a, Action b);

}  // namespace smddp::results
