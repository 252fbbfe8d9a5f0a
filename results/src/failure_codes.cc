#include "smddp/results/failure_codes.h"

#include <array>
#include <string>

#include "smddp/error.h"

namespace smddp::results {
namespace {

constexpr std::array<ActionTraits, 6> kActions{{
    {Action::None, "nothing to do now: watch whether it lasts", false, ""},
    {Action::ReRun, "run the job or the check again; a repeat is a finding for a person", true, "smddp.io/preflight"},
    {Action::Config, "fix a setting, a version or the profile; the hardware is fine", true, "smddp.io/preflight"},
    {Action::Escalate, "a person looks: the evidence does not name a single cause", true, "smddp.io/preflight"},
    {Action::Reboot, "reboot the node (a GPU or EFA reset), then run preflight again", true, "smddp.io/pending-reboot"},
    {Action::Replace, "take the node out of service and replace it", true, "smddp.io/pending-replacement"},
}};

using enum Action;
// Keep codes stable: rename never, add rows freely. docs/diag.md lists them.
constexpr FailureCode kCodes[] = {
    // preflight checks (diag/src/preflight/checks.cc names each check's code)
    {"SMDDP-PREFLIGHT-GPU-COUNT", Reboot, "a GPU missing from NVML often returns after a reboot; replace the node if it does not"},
    {"SMDDP-PREFLIGHT-GPU-MODEL", Config, "the node is not the instance type the profile expects: fix the profile or the node group"},
    {"SMDDP-PREFLIGHT-GPU-ECC", Reboot, "uncorrectable ECC errors: reboot to reset the GPU; replace the node if they come back"},
    {"SMDDP-PREFLIGHT-GPU-MEMORY-RETIREMENT", Reboot, "retired pages or row remaps pending: reboot to apply them; a failed remap or too many retired pages means replace"},
    {"SMDDP-PREFLIGHT-GPU-TEMPERATURE", Escalate, "a GPU runs too hot: check the node's cooling and its neighbours' load"},
    {"SMDDP-PREFLIGHT-GPU-THROTTLE", Escalate, "a GPU is throttled for hardware, thermal or power reasons: check cooling and power"},
    {"SMDDP-PREFLIGHT-EFA-COUNT", Reboot, "an EFA device is missing or its port is down: reboot to reload the driver; replace if it stays"},
    {"SMDDP-PREFLIGHT-MEMLOCK", Config, "raise the locked-memory limit (ulimit -l unlimited; the container runtime's or Slurm's limits)"},
    {"SMDDP-PREFLIGHT-SHM-SIZE", Config, "enlarge /dev/shm (docker --shm-size, a memory-backed emptyDir)"},
    {"SMDDP-PREFLIGHT-DISK-FREE", Config, "free disk space on the named file system"},
    {"SMDDP-PREFLIGHT-FABRIC-PROVIDER", Config, "install or configure the libfabric provider (EFA installer, FI_PROVIDER)"},
    {"SMDDP-PREFLIGHT-RANK-REACHABILITY", Reboot, "a rank did not answer its peers: check the node's network, reboot it if it stays unreachable"},
    {"SMDDP-CONFIG-MISMATCH", Config, "versions or NCCL_/FI_/SMDDP_/RDMAV_ settings differ across nodes or from the golden file: align the named nodes"},
    {"SMDDP-PREFLIGHT-CLOCK-SKEW", Config, "the node's clock is off: fix its time synchronisation (chrony, the Amazon Time Sync Service)"},
    {"SMDDP-PREFLIGHT-ALLREDUCE-BUSBW", Escalate, "the cluster's allreduce is slow: run smddp-diag isolate to name the node or link"},
    {"SMDDP-PREFLIGHT-ALLREDUCE-WRONG", Escalate, "an allreduce gave wrong elements: run smddp-bench -B or smddp-diag isolate to locate the rank"},
    {"SMDDP-PREFLIGHT-LINK-BANDWIDTH", Reboot, "a node-to-node link is slow: reboot the named node; replace it if a re-run still names it"},
    {"SMDDP-PREFLIGHT-FABRIC-COUNTERS", Escalate, "fabric error counters moved during the checks: look at the named counters and the link"},
    {"SMDDP-PREFLIGHT-CHECK-ERROR", Escalate, "the check could not run (an internal error): read its reason; the node's health is unknown"},
    {"SMDDP-PREFLIGHT-NO-RESULT", Reboot, "the node's rank sent no result in time: it may hang; reboot it if a re-run repeats this"},
    // smddp-diag isolate
    {"SMDDP-ISOLATE-SLOW-NODE", Reboot, "the node is slower than the fleet with every partner: reboot it; replace it if a re-run still names it"},
    {"SMDDP-ISOLATE-SLOW-LINK", Escalate, "one link is slow while both ends pass elsewhere: check the fabric path between the two nodes"},
    {"SMDDP-ISOLATE-SLOW-GROUP", Escalate, "a bisected group fails though its pairs pass: re-run isolate; look at the fabric between the named nodes"},
    {"SMDDP-ISOLATE-UNREACHABLE", Reboot, "a rank of the node stopped answering: reboot the node"},
    {"SMDDP-ISOLATE-PROBE-FAILED", ReRun, "every test with this node failed (an error, not a slow result): read the errors and re-run"},
    {"SMDDP-ISOLATE-CORRUPTION", Replace, "the node returned wrong results with two or more partners: silent data corruption; replace the node"},
    {"SMDDP-ISOLATE-CORRUPTION-UNPLACED", Escalate, "wrong results that no single node reproduced with other partners: the link or one of the named nodes; re-test them with smddp-bench -B"},
    // smddp-bench
    {"SMDDP-BENCH-BELOW-THRESHOLD", Escalate, "the average bus bandwidth is below --min-busbw: run smddp-diag isolate"},
    {"SMDDP-BENCH-BELOW-BASELINE", Escalate, "rows are below the baseline: run smddp-diag isolate to name the node or link"},
    {"SMDDP-BENCH-NOT-JUDGED", Config, "no row matched the baseline: pass a baseline for this shape (collective, size, ranks)"},
    {"SMDDP-BENCH-WRONG", Escalate, "results differ from the expected values (#wrong): run with -B to locate the rank, element and bit"},
    {"SMDDP-BENCH-BITWISE", Replace, "repeats differ bit for bit on identical inputs: replace the node of the named rank"},
    // smddp-diag ras (NCCL's RAS service); these four strings predate the table
    {"SMDDP-RAS-PEER-DEAD", Replace, "RAS declared a process dead: replace its node, restart the job"},
    {"SMDDP-RAS-PEER-UNRESPONSIVE", None, "RAS could not reach a rank: nothing yet; it becomes SMDDP-RAS-PEER-DEAD after 60 s"},
    {"SMDDP-RAS-RANK-STUCK", Reboot, "a rank's collectives do not progress: reboot its node, restart the job"},
    {"SMDDP-RAS-COMM-ERROR", ReRun, "NCCL reported an error: restart the job and read NCCL's log"},
    // a failed result read from a report that carries no code (written before codes)
    {"SMDDP-UNCLASSIFIED", Escalate, "a failure without a code of its own (an older or newer report): read its reason"},
};

}  // namespace

std::string_view to_string(Action a) {
  switch (a) {
    case Action::None: return "none";
    case Action::ReRun: return "re-run";
    case Action::Config: return "config";
    case Action::Escalate: return "escalate";
    case Action::Reboot: return "reboot";
    case Action::Replace: return "replace";
  }
  return "escalate";
}

std::optional<Action> parse_action(std::string_view text) {
  for (const auto& t : kActions) {
    if (to_string(t.action) == text) return t.action;
  }
  return std::nullopt;
}

std::span<const ActionTraits> action_traits() { return kActions; }

const ActionTraits& traits(Action a) { return kActions[static_cast<size_t>(a)]; }

std::span<const FailureCode> failure_codes() { return kCodes; }

const FailureCode* find_failure_code(std::string_view code) {
  for (const auto& c : kCodes) {
    if (c.code == code) return &c;
  }
  return nullptr;
}

const FailureCode& failure_code(std::string_view code) {
  if (const FailureCode* c = find_failure_code(code)) return *c;
  throw Error("no failure code '" + std::string(code) + "'");
}

bool well_formed_code(std::string_view code) {
  if (!code.starts_with("SMDDP-") || code.size() > 63) return false;  // 63: a Kubernetes label value
  bool word = false;  // inside a word
  for (char c : code.substr(6)) {
    if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      word = true;
    } else if (c == '-' && word) {
      word = false;
    } else {
      return false;
    }
  }
  return word;
}

Action most_severe(Action a, Action b) { return static_cast<int>(a) >= static_cast<int>(b) ? a : b; }

}  // namespace smddp::results
