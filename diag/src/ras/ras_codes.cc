#include "ras/ras_codes.h"

#include <array>

namespace smddp::diag {
namespace {

constexpr std::array<RasCode, 4> kCodes{{
    {RasFailureKind::PeerDead, "SMDDP-RAS-PEER-DEAD", "replace",
     "RAS declared a process dead (a PEER_DEAD event, or a missing rank considered dead): unreachable for 60 s"},
    {RasFailureKind::PeerUnresponsive, "SMDDP-RAS-PEER-UNRESPONSIVE", "watch",
     "RAS could not reach a rank while collecting the status; after 60 s it is declared dead"},
    {RasFailureKind::RankStuck, "SMDDP-RAS-RANK-STUCK", "reboot",
     "a rank's collective count is behind its communicator's and did not move between two status queries"},
    {RasFailureKind::CommError, "SMDDP-RAS-COMM-ERROR", "re-run",
     "a rank reports an asynchronous NCCL error, a failed initialization or an abort"},
}};

}  // namespace

std::span<const RasCode> ras_codes() { return kCodes; }

const RasCode& ras_code(RasFailureKind kind) {
  for (const auto& c : kCodes) {
    if (c.kind == kind) return c;
  }
  return kCodes[0];  // unreachable: every kind has a row (ras_codes_test)
}

}  // namespace smddp::diag
