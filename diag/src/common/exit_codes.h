// smddp-diag's exit codes (documented in docs/diag.md). Bad user input is
// 64 (EX_USAGE) before any work starts, as in every smddp tool.
#pragma once

#include "smddp/error.h"

namespace smddp::diag {

// A provider, device or library the user asked for is not on this host (exit 69).
class UnavailableError : public smddp::Error {
 public:
  using Error::Error;
};

inline constexpr int kExitOk = 0;           // healthy / nothing flagged
inline constexpr int kExitUnhealthy = 1;    // a check failed or a link was flagged
inline constexpr int kExitUsage = 64;       // bad flags, files or values (EX_USAGE)
inline constexpr int kExitUnavailable = 69; // a requested provider or device is absent (EX_UNAVAILABLE)
inline constexpr int kExitRuntime = 70;     // a runtime failure: timeout, lost peer, transport error (EX_SOFTWARE)

}  // namespace smddp::diag
