// Builds the engine's Communicator over any bootstrap (MPI, TCP store).
#pragma once

#include <memory>

#include "smddp/communicator.h"
#include "bootstrap/bootstrap.h"

namespace smddp {

std::unique_ptr<Communicator> make_engine_communicator(std::unique_ptr<Bootstrap> bootstrap,
                                                       const CommunicatorOptions& options);

}  // namespace smddp
