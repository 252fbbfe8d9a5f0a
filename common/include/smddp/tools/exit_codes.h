// Exit codes of every smddp tool: one failure, one code, whichever tool hits
// it. README.md's exit-code table lists the same rows (a unit test compares).
#pragma once

#include <exception>
#include <span>
#include <string>

#include "smddp/error.h"

namespace smddp::tools {

// A provider, device or library the user asked for is not on this host (exit 69).
class UnavailableError : public smddp::Error {
 public:
  using Error::Error;
};

inline constexpr int kExitOk = 0;              // success / healthy
inline constexpr int kExitFailed = 1;          // bench: wrong values; diag: a check failed or a link was flagged
inline constexpr int kExitBelowThreshold = 2;  // bench: avg bus bandwidth below --min-busbw, a row below --baseline
inline constexpr int kExitLost = 3;            // timeout, lost peer, transport or CUDA device failure, rank killed
inline constexpr int kExitUsage = 64;          // bad flags, files or values, before any work (EX_USAGE)
inline constexpr int kExitUnavailable = 69;    // a requested provider or device is absent (EX_UNAVAILABLE)
inline constexpr int kExitRuntime = 70;        // any other runtime failure (EX_SOFTWARE)

// The code for an exception that ended a tool: UsageError 64,
// UnavailableError 69, TimeoutError/PeerLostError/TransportError 3, else 70.
int exit_code_for(const std::exception& e);

// The text of an exception that ended a tool, for its one line: what()
// except for std::bad_alloc, whose what() is libstdc++'s "std::bad_alloc".
std::string error_text(const std::exception& e);

struct ExitCodeUse {
  int code;
  bool bench;  // smddp-bench may exit with it
  bool diag;   // smddp-diag may exit with it
};
// Every code and the tools that use it, in README's order.
std::span<const ExitCodeUse> exit_code_uses();

}  // namespace smddp::tools
