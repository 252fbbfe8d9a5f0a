// smddp-bench --list-algorithms [--explain | --backend mpi]: what the
// registry offers, the selection table this job's communicator built (rank 0
// prints it), and the Open MPI algorithms `--backend mpi:NAME` can force.
#pragma once

#include "smddp/communicator.h"

namespace smddp::bench {

void print_algorithms();
void print_mpi_algorithms();
void print_selection(const SelectionTable& t);

}  // namespace smddp::bench
