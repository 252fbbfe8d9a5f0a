#include "ras/ras_codes.h"

#include <array>

#include "smddp/results/failure_codes.h"

namespace smddp::diag {
namespace {

constexpr std::array<RasCode, 4> kCodes{{
    {RasFailureKind::PeerDead, "SMDDP-RAS-PEER-DEAD",
     "RAS declared a process dead (a PEER_DEAD event, or a missing rank considered dead): unreachable for 60 s"},
    {RasFailureKind::PeerUnresponsive, "SMDDP-RAS-PEER-UNRESPONSIVE",
     "RAS could not reach a rank while collecting the status; after 60 s it is declared dead"},
    {RasFailureKind::RankStuck, "SMDDP-RAS-RANK-STUCK",
     "a rank's collective count is behind its communicator's and did not move between two status queries"},
    {RasFailureKind::CommError, "SMDDP-RAS-COMM-ERROR",
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

std::string_view ras_action(const RasCode& c) { return results::to_string(results::failure_code(c.code).action); }

}  // namespace smddp::diag
