// The two measurements of smddp-diag isolate, over MPI point-to-point with
// nonblocking calls that give up at a deadline: a ring allreduce inside a
// group of ranks and a bidirectional stream between two ranks. A stopped or
// lost peer ends the probe at its deadline with the peer named; requests
// still in flight then keep their buffers until the process exits.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "shared/mpi_util.h"

namespace smddp::diag {

struct ProbeResult {
  std::string error;        // empty when it completed
  // The allreduce completed with wrong results: how many elements, and the
  // first one's index, expected and received bits (silent data corruption).
  std::string corruption;
  double seconds = 0;       // the timed part
  double gbytes_per_s = 0;  // allreduce: bus bandwidth; stream: bytes sent + received per second
  bool left_requests = false;  // a request is still in flight (the job must not MPI_Finalize)
};

struct AllreduceProbe {
  uint64_t bytes = 1 << 20;
  int warmup = 1;
  int iterations = 3;
  // Fault injection (SMDDP_DIAG_FAULT corrupt): this rank flips the lowest
  // mantissa bit of the first element of every chunk it sends.
  bool flip_sent_bit = false;
};
// Every rank of `group` (ranks of `comm`, this rank among them) calls it with
// the same group and tag. `hosts` names the ranks in messages.
ProbeResult probe_allreduce(MPI_Comm comm, const std::vector<int>& group, const AllreduceProbe& p, int tag,
                            Deadline deadline, const std::vector<std::string>& hosts);

struct StreamProbe {
  uint64_t bytes = 256 << 10;  // per message
  int window = 4;              // messages in flight each way
  int iterations = 2;
};
// This rank and `peer` both call it with the same tag.
ProbeResult probe_stream(MPI_Comm comm, int peer, const StreamProbe& p, int tag, Deadline deadline,
                         const std::vector<std::string>& hosts);

}  // namespace smddp::diag
