// Point-to-point over MPI: the fallback between nodes (and between virtual
// nodes on one machine).
#pragma once

#include <mpi.h>

#include <memory>

#include "transports/transport.h"

namespace smddp {

std::unique_ptr<Transport> make_mpi_transport(MPI_Comm comm);

}  // namespace smddp
