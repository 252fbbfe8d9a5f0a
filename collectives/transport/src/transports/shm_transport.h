// Point-to-point inside a node over the segment's cell channels. A message
// is cut into cells; the sender fills free cells, the receiver drains them,
// both from progress(), so a pair can exchange large messages in both
// directions at once without deadlock.
#pragma once

#include <memory>

#include "bootstrap/bootstrap.h"
#include "transports/shm_segment.h"
#include "transports/transport.h"

namespace smddp {

std::unique_ptr<Transport> make_shm_transport(ShmSegment& segment, const Topology& topo);

// kill(pid, 0) says the process is gone; shared by everything that waits on
// a local peer.
bool local_process_gone(int pid);

}  // namespace smddp
