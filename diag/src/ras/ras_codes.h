// The failure codes smddp-diag gives what NCCL's RAS service reports, in
// one table (ras_codes.cc; docs/diag.md, "ras", lists the same rows and a
// unit test compares). A code names what happened, the action says what
// an operator does about it:
//   replace  the node or process is gone: replace it, restart the job
//   reboot   a rank hangs: reboot its node, restart the job
//   re-run   NCCL reported an error: restart the job, read NCCL's log
//   watch    transient: nothing yet; it becomes another code if it lasts
#pragma once

#include <span>
#include <string_view>

namespace smddp::diag {

enum class RasFailureKind { PeerDead, PeerUnresponsive, RankStuck, CommError };

struct RasCode {
  RasFailureKind kind;
  std::string_view code;    // "SMDDP-RAS-PEER-DEAD": stable, in metrics and alert rules
  std::string_view action;  // replace, reboot, re-run, watch
  std::string_view meaning;
};

std::span<const RasCode> ras_codes();
const RasCode& ras_code(RasFailureKind kind);

}  // namespace smddp::diag
