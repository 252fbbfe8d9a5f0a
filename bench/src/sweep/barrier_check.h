// Checks that a barrier waits, with no help from the backend under test:
// before each round the ranks of a host announce the round in a private
// shared-memory segment of that host, and after the barrier each reads its
// host-mates' announcements. A rank missing there left before everyone
// arrived. Ranks enter after random delays, so a barrier that does not wait
// is caught. Ranks on other hosts have no shared memory with this one and
// are not seen: across hosts the multi-rank suite's checks stand in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "smddp/communicator.h"

namespace smddp::bench {

// Runs `rounds` barriers through `barrier` and returns the host-mates found
// missing after them, summed over the rounds (0 when the barrier works).
// Collective over `comm`, whose allgathers order the segment's creation.
size_t check_barrier(Communicator& comm, const std::vector<std::string>& hosts, uint64_t seed, int rounds,
                     const std::function<void()>& barrier);

}  // namespace smddp::bench
