// Which failure code (smddp/results/failure_codes.h, the one table of codes
// and their actions) each kind of failure NCCL's RAS service reports gets.
// A code names what happened, its action what an operator does about it:
//   replace  the node or process is gone: replace it, restart the job
//   reboot   a rank hangs: reboot its node, restart the job
//   re-run   NCCL reported an error: restart the job, read NCCL's log
//   none     transient: nothing yet; it becomes another code if it lasts
#pragma once

#include <span>
#include <string_view>

namespace smddp::diag {

enum class RasFailureKind { PeerDead, PeerUnresponsive, RankStuck, CommError };

struct RasCode {
  RasFailureKind kind;
  std::string_view code;    // "SMDDP-RAS-PEER-DEAD": stable, in metrics and alert rules
  std::string_view meaning;
};

std::span<const RasCode> ras_codes();
const RasCode& ras_code(RasFailureKind kind);
// The code's action class from the failure-code table: "replace", "reboot", ...
std::string_view ras_action(const RasCode& c);

}  // namespace smddp::diag
