#include "core/check.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace smddp::detail {
namespace {
int g_rank = -1;
std::string g_host = "?";
}  // namespace

void set_check_identity(int rank, const char* host) {
  g_rank = rank;
  g_host = host;
}

void check_failed(const char* file, int line, const char* expr) {
  std::fprintf(stderr, "smddp: internal error at %s:%d (rank %d on %s): CHECK(%s) failed\n", file,
               line, g_rank, g_host.c_str(), expr);
  std::abort();
}

}  // namespace smddp::detail
