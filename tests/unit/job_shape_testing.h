// The job shape the selection-table tests rank (algorithms/selector.h).
#pragma once

#include <string>
#include <utility>

#include "algorithms/selector.h"

namespace smddp::testing {

inline JobShape job(int hosts, int ranks_per_host, std::string transport = "socket") {
  JobShape j;
  j.hosts = hosts;
  j.ranks_per_host = ranks_per_host;
  j.transport = std::move(transport);
  return j;
}

}  // namespace smddp::testing
