// Internal invariants. A failed CHECK is a bug in the engine: it prints
// file:line with rank and host and aborts.
#pragma once

namespace smddp::detail {

[[noreturn]] void check_failed(const char* file, int line, const char* expr);
// Set once the rank and host are known, for CHECK messages.
void set_check_identity(int rank, const char* host);

}  // namespace smddp::detail

#define SMDDP_CHECK(cond)                                                \
  do {                                                                   \
    if (!(cond)) ::smddp::detail::check_failed(__FILE__, __LINE__, #cond); \
  } while (0)
