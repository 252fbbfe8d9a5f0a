// Where a sweep's buffers live (--mem host|cuda) and everything the harness
// does to them: fill inputs, poison outputs, count wrong outputs, time calls.
//
// Device buffers come from cudaMalloc. Inputs are generated and outputs
// checked by the same code as host buffers (data.h), through a host shadow
// buffer and cudaMemcpy, so both memories check against identical values.
// Device iterations are timed with CUDA events on the backend's stream (or a
// harness stream for host-driven backends): events recorded on an idle GPU
// include the launch, so the times compare with the host clock's.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "backend.h"
#include "data.h"
#include "options.h"

namespace smddp::bench {

class SweepBuffers {
 public:
  // Throws smddp::Error when the memory cannot be allocated.
  static std::unique_ptr<SweepBuffers> create(MemoryKind kind, size_t send_bytes, size_t recv_bytes);
  virtual ~SweepBuffers() = default;

  virtual char* send() = 0;
  virtual char* recv() = 0;
  // `p` points into send() or recv(); counts are elements.
  virtual void fill_send(const DataSpec& s, int rank, void* p, size_t count) = 0;
  virtual void poison(void* p, size_t bytes) = 0;
  // Wrong outputs of a call with `count` whose output at `p` has `elements`.
  virtual size_t count_wrong(const DataSpec& s, int rank, const void* p, size_t count, size_t elements) = 0;
  // One timed iteration: backend.run(args) then backend.sync(); microseconds.
  virtual double time_us(Backend& backend, const CollectiveArgs& args) = 0;
};


// Number of CUDA devices; 0, with the runtime's reason in *why, when there is
// none (always 0 in builds without CUDA).
int cuda_device_count(std::string* why = nullptr);

// Checks before MPI starts that --mem cuda / --backend nccl can run here;
// throws UsageError ("--mem cuda: no CUDA device on host X (reason)").
void check_cuda_request(const BenchOptions& o);

// For --mem cuda, after the ranks connected: binds this rank to device
// local_rank % devices (as nccl-tests does) and checks that `bytes_per_rank`
// of device memory fits for the ranks sharing it (`local_ranks` on this host,
// spread over its devices). Returns why not, or "" when all is well.
std::string prepare_device(int local_rank, int local_ranks, double bytes_per_rank);

}  // namespace smddp::bench
