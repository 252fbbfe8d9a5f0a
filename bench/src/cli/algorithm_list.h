// smddp-bench --list-algorithms [--explain]: what the registry offers, and
// the selection table this job's communicator built (rank 0 prints it).
#pragma once

#include "smddp/communicator.h"

namespace smddp::bench {

void print_algorithms();
void print_selection(const SelectionTable& t);

}  // namespace smddp::bench
