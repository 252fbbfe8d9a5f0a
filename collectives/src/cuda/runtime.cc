#include "cuda/runtime.h"

#include <cmath>
#include <mutex>

#include "smddp/error.h"

namespace smddp::cuda {

void check(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return;
  cudaGetLastError();  // a non-sticky error must not be reported again later
  throw Error(std::string(what) + ": " + cudaGetErrorName(rc) + ": " + cudaGetErrorString(rc));
}

int device_count(std::string* why) {
  static std::once_flag once;
  static int count = 0;
  static std::string reason;
  std::call_once(once, [] {
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess) {
      count = 0;
      reason = std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc);
      cudaGetLastError();
    } else if (count == 0) {
      reason = "the CUDA runtime reports no device";
    }
  });
  if (why) *why = reason;
  return count;
}

bool is_device_pointer(const void* p) {
  if (p == nullptr || device_count() == 0) return false;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

void wait(cudaEvent_t event, const Deadline& deadline, bool shared_cores, const char* collective,
          double timeout_seconds, const char* doing) {
  Backoff backoff(shared_cores);
  for (;;) {
    cudaError_t rc = cudaEventQuery(event);
    if (rc == cudaSuccess) return;
    if (rc != cudaErrorNotReady) {
      // A device failure (a faulted kernel, a lost GPU) while waiting: the
      // run ends like a transport failure (exit 3), not as an internal error.
      cudaGetLastError();
      throw TransportError(std::string(collective) + ": CUDA error while " + doing + ": " + cudaGetErrorName(rc) +
                           ": " + cudaGetErrorString(rc));
    }
    if (backoff.pause() && deadline.expired()) {
      throw TimeoutError(std::string(collective) + " timed out after " +
                         std::to_string(std::lround(timeout_seconds)) + " s " + doing);
    }
  }
}

Stream::Stream() { check(cudaStreamCreate(&stream_), "cudaStreamCreate"); }

Stream::~Stream() {
  if (stream_) cudaStreamDestroy(stream_);
}

Event::Event() { check(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate"); }

Event::~Event() {
  if (event_) cudaEventDestroy(event_);
}

void Event::record(cudaStream_t stream) { check(cudaEventRecord(event_, stream), "cudaEventRecord"); }

PinnedBuffer::~PinnedBuffer() {
  // At process exit the runtime may already be gone; nothing to report then.
  if (data_) cudaFreeHost(data_);
}

char* PinnedBuffer::get(size_t bytes) {
  if (bytes > size_) {
    if (data_) check(cudaFreeHost(data_), "cudaFreeHost");
    data_ = nullptr;
    size_ = 0;
    void* p = nullptr;
    check(cudaHostAlloc(&p, bytes, cudaHostAllocPortable), "cudaHostAlloc of staging memory");
    data_ = static_cast<char*>(p);
    size_ = bytes;
  }
  return data_;
}

}  // namespace smddp::cuda
