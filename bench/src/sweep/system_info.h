// Facts about this host the report needs: memory, MPI version, memory
// bandwidth (the physical bound --roofline compares against).
#pragma once

#include <string>

#include "smddp/communicator.h"

namespace smddp::bench {

double available_memory_bytes();  // MemAvailable, 0 when unknown
double physical_memory_bytes();   // the host's RAM (sysconf), 0 when unknown
std::string mpi_library_version();
// STREAM-style copy bandwidth (2 x bytes / time) in GB/s, measured by rank 0
// while the others wait; every rank gets the number.
double measure_memory_bandwidth(Communicator& comm);

}  // namespace smddp::bench
