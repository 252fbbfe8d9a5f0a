#include "smddp/tools/exit_codes.h"

#include <array>
#include <new>

namespace smddp::tools {

int exit_code_for(const std::exception& e) {
  if (dynamic_cast<const UsageError*>(&e)) return kExitUsage;
  if (dynamic_cast<const UnavailableError*>(&e)) return kExitUnavailable;
  if (dynamic_cast<const TimeoutError*>(&e) || dynamic_cast<const PeerLostError*>(&e) ||
      dynamic_cast<const TransportError*>(&e)) {
    return kExitLost;
  }
  return kExitRuntime;
}

std::string error_text(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e)) return "out of memory";
  return e.what();
}

std::span<const ExitCodeUse> exit_code_uses() {
  static constexpr std::array<ExitCodeUse, 7> kUses{{
      {kExitOk, true, true},
      {kExitFailed, true, true},
      {kExitBelowThreshold, true, false},
      {kExitLost, true, true},
      {kExitUsage, true, true},
      {kExitUnavailable, false, true},
      {kExitRuntime, true, true},
  }};
  return kUses;
}

}  // namespace smddp::tools
