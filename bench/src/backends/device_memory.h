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

#include "backends/backend.h"
#include "sweep/data.h"
#include "cli/options.h"

namespace smddp::bench {

class SweepBuffers {
 public:
  // Throws smddp::Error when the memory cannot be allocated.
  // `huge_pages` (--huge-pages, host memory only): on transparent huge pages.
  static std::unique_ptr<SweepBuffers> create(MemoryKind kind, size_t send_bytes, size_t recv_bytes,
                                              bool huge_pages = false);
  virtual ~SweepBuffers() = default;

  virtual char* send() = 0;
  virtual char* recv() = 0;
  // `p` points into send() or recv(); counts are elements.
  virtual void fill_send(const DataSpec& s, int rank, void* p, size_t count) = 0;
  virtual void poison(void* p, size_t bytes) = 0;
  // Wrong outputs of a call with `count` whose output at `p` has `elements`.
  virtual size_t count_wrong(const DataSpec& s, int rank, const void* p, size_t count, size_t elements) = 0;
  // The `bytes` of output at `p` readable on the host (-B): `p` itself for
  // host buffers, else a host copy valid until the next call on these buffers.
  virtual const char* output(const void* p, size_t bytes) = 0;
  // One timed iteration: backend.run(args) then backend.sync(); microseconds.
  virtual double time_us(Backend& backend, const CollectiveArgs& args) = 0;
  // Share of the buffers the kernel backs with huge pages (0 for device memory).
  virtual double huge_page_fraction() const { return 0; }
};


// Number of CUDA devices; 0, with the runtime's reason in *why, when there is
// none (always 0 in builds without CUDA). Initialises the CUDA runtime: call
// it only in the rank process (after supervise_rank() forked), never in the
// supervising parent - CUDA used in a child after the parent initialised it
// fails or hangs.
int cuda_device_count(std::string* why = nullptr);

// GPUs the driver lists on this host, independently of the CUDA runtime:
// NVML (libnvidia-ml.so.1, or $SMDDP_NVML_LIBRARY), else `nvidia-smi -L`
// from PATH; 0 when neither lists one. Rank process only, like the above.
int listed_gpus(std::string* source = nullptr);

// Checks that need no CUDA call (safe before the fork): --mem cuda and
// --backend nccl need a CUDA build, nccl needs --mem cuda, mpi host buffers.
// Throws UsageError.
void check_cuda_request(const BenchOptions& o);

// In the rank process, before the ranks connect: is there a device for
// --mem cuda? Throws UsageError ("--mem cuda: no CUDA device on host X
// (reason)") when the driver lists no GPU either, and smddp::TransportError
// (exit 3) when a GPU is listed but the runtime cannot use it (a driver too
// old for this CUDA, a GPU that fell off the bus): a broken GPU node is a
// failure, not "no device". Sets CUDA_DEVICE_ORDER=PCI_BUS_ID unless set,
// so CUDA ordinals follow nvidia-smi's and NVML's order.
void check_cuda_device(const BenchOptions& o);

// For --mem cuda, after the ranks connected: binds this rank to device
// host_rank % devices (host_rank: its rank among the processes on the same
// host, whatever SMDDP_RANKS_PER_NODE says) and checks that `bytes_per_rank`
// of device memory fits for the `host_ranks` ranks of this host that share
// the device. Returns why not, or "" when all is well.
std::string prepare_device(int host_rank, int host_ranks, double bytes_per_rank);

}  // namespace smddp::bench
