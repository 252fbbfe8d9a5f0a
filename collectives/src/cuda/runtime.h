// The CUDA runtime as the engine uses it: errors turned into smddp::Error,
// "is there a device", "is this device memory", and small owners for
// streams, events and pinned host memory. Compiled only in CUDA builds.
//
// Any error from cudaGetDeviceCount (no driver, a driver older than the
// runtime, no device) means "no CUDA device" to the engine: host-only
// machines run CUDA builds, and everything here degrades to "host memory"
// there. The tools decide whether that is a failure (a GPU that nvidia-smi
// or NVML lists but the runtime cannot use is one: smddp-bench --mem cuda).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "core/wait.h"

namespace smddp::cuda {

// Throws smddp::Error("<what>: <CUDA error name>: <description>") unless
// `rc` is cudaSuccess. Clears the runtime's sticky last error either way.
void check(cudaError_t rc, const char* what);

// Devices this process can use; 0 when the runtime reports any error, with
// the reason in *why (when not null). Cached after the first call.
int device_count(std::string* why = nullptr);

// True for device and managed allocations; false for host memory, null, and
// whenever no device exists (no runtime context is created then).
bool is_device_pointer(const void* p);

// Polls `event` until it has completed, with the engine's backoff (no core is
// held while copies run); throws TimeoutError("<collective> timed out after
// N s <doing>") when `deadline` passes first, TransportError when the event
// reports a CUDA error (a device failure: exit 3 in the tools).
// shared_cores: the Placement's verdict for this host (Backoff).
void wait(cudaEvent_t event, const Deadline& deadline, bool shared_cores, const char* collective,
          double timeout_seconds, const char* doing);

// A stream on the current device. Not cudaStreamNonBlocking: work the
// caller queued on the legacy default stream completes before ours starts.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// An event without timing, for ordering and completion polls.
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream);

 private:
  cudaEvent_t event_ = nullptr;
};

// Page-locked host memory (cudaHostAlloc), grown on demand, kept.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  // At least `bytes`; the old contents are not kept when it grows.
  char* get(size_t bytes);

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace smddp::cuda
