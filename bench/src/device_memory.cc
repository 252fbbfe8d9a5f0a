#include "device_memory.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#if SMDDP_CUDA_ENABLED
#include <cuda_runtime_api.h>
#endif

#include "smddp/error.h"

namespace smddp::bench {
namespace {

double now_us() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

[[maybe_unused]] std::string host_name() {
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  return host;
}

bool uses_nccl(const BenchOptions& o) {
  return std::find(o.backends.begin(), o.backends.end(), "nccl") != o.backends.end();
}

class HostBuffers final : public SweepBuffers {
 public:
  HostBuffers(size_t send_bytes, size_t recv_bytes) : send_(send_bytes, 1), recv_(recv_bytes, 1) {}
  char* send() override { return send_.data(); }
  char* recv() override { return recv_.data(); }
  void fill_send(const DataSpec& s, int rank, void* p, size_t count) override {
    bench::fill_send(s, rank, p, count);
  }
  void poison(void* p, size_t bytes) override { std::memset(p, 0xA5, bytes); }
  size_t count_wrong(const DataSpec& s, int rank, const void* p, size_t count, size_t) override {
    return bench::count_wrong(s, rank, p, count);
  }
  double time_us(Backend& backend, const CollectiveArgs& args) override {
    const double t0 = now_us();
    backend.run(args);
    backend.sync();
    return now_us() - t0;
  }

 private:
  // Touched once here so the first row does not pay for page faults.
  std::vector<char> send_, recv_;
};

#if SMDDP_CUDA_ENABLED

void check(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return;
  cudaGetLastError();
  throw Error(std::string(what) + ": " + cudaGetErrorString(rc));
}

void* allocate(size_t bytes, const char* what) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), what);
  return p;
}

class DeviceBuffers final : public SweepBuffers {
 public:
  DeviceBuffers(size_t send_bytes, size_t recv_bytes) : shadow_(std::max(send_bytes, recv_bytes)) {
    send_ = static_cast<char*>(allocate(send_bytes, "cudaMalloc of the send buffer"));
    recv_ = static_cast<char*>(allocate(recv_bytes, "cudaMalloc of the receive buffer"));
    check(cudaMemset(send_, 1, send_bytes), "cudaMemset");
    check(cudaMemset(recv_, 1, recv_bytes), "cudaMemset");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~DeviceBuffers() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
    cudaFree(send_);
    cudaFree(recv_);
  }

  char* send() override { return send_; }
  char* recv() override { return recv_; }

  void fill_send(const DataSpec& s, int rank, void* p, size_t count) override {
    bench::fill_send(s, rank, shadow_.data(), count);
    check(cudaMemcpy(p, shadow_.data(), count * dtype_size(s.dtype), cudaMemcpyHostToDevice), "cudaMemcpy of inputs");
  }
  void poison(void* p, size_t bytes) override { check(cudaMemset(p, 0xA5, bytes), "cudaMemset"); }
  size_t count_wrong(const DataSpec& s, int rank, const void* p, size_t count, size_t elements) override {
    check(cudaMemcpy(shadow_.data(), p, elements * dtype_size(s.dtype), cudaMemcpyDeviceToHost),
          "cudaMemcpy of outputs");
    return bench::count_wrong(s, rank, shadow_.data(), count);
  }

  double time_us(Backend& backend, const CollectiveArgs& args) override {
    auto* stream = backend.stream() ? static_cast<cudaStream_t>(backend.stream()) : stream_;
    check(cudaEventRecord(start_, stream), "cudaEventRecord");
    backend.run(args);
    check(cudaEventRecord(stop_, stream), "cudaEventRecord");
    backend.sync();
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e3;
  }

 private:
  char* send_ = nullptr;
  char* recv_ = nullptr;
  std::vector<char> shadow_;  // inputs made and outputs checked here
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

#endif  // SMDDP_CUDA_ENABLED

}  // namespace

std::unique_ptr<SweepBuffers> SweepBuffers::create(MemoryKind kind, size_t send_bytes, size_t recv_bytes) {
#if SMDDP_CUDA_ENABLED
  if (kind == MemoryKind::Cuda) return std::make_unique<DeviceBuffers>(send_bytes, recv_bytes);
#endif
  if (kind != MemoryKind::Host) throw UsageError("--mem cuda needs a build with CUDA (SMDDP_WITH_CUDA)");
  return std::make_unique<HostBuffers>(send_bytes, recv_bytes);
}

int cuda_device_count(std::string* why) {
#if SMDDP_CUDA_ENABLED
  int n = 0;
  const cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) {
    // No driver, a driver older than the runtime, no device: all "none".
    cudaGetLastError();
    if (why) *why = cudaGetErrorString(rc);
    return 0;
  }
  if (n == 0 && why) *why = "the CUDA runtime reports no device";
  return n;
#else
  if (why) *why = "built without CUDA";
  return 0;
#endif
}

void check_cuda_request(const BenchOptions& o) {
  const bool cuda_mem = o.mem == MemoryKind::Cuda;
  const bool nccl = uses_nccl(o);
  if (!cuda_mem && !nccl) return;
#if !SMDDP_CUDA_ENABLED
  if (cuda_mem) throw UsageError("--mem cuda needs a build with CUDA (SMDDP_WITH_CUDA)");
  throw UsageError("--backend nccl needs a build with CUDA and NCCL (SMDDP_WITH_CUDA)");
#else
  if (nccl && !cuda_mem) throw UsageError("--backend nccl takes device buffers: add --mem cuda");
  std::string why;
  if (cuda_device_count(&why) == 0) {
    throw UsageError("--mem cuda: no CUDA device on host " + host_name() + " (" + why + ")");
  }
  for (const auto& b : o.backends) {
    if (b == "mpi") {
      throw UsageError("--mem cuda: the mpi backend takes host buffers only; use --backend smddp,nccl");
    }
  }
#endif
}

std::string prepare_device(int local_rank, int local_ranks, double bytes_per_rank) {
#if SMDDP_CUDA_ENABLED
  std::string why;
  const int devices = cuda_device_count(&why);
  if (devices == 0) return "--mem cuda: no CUDA device on host " + host_name() + " (" + why + ")";
  const int device = local_rank % devices;
  size_t free_bytes = 0, total_bytes = 0;
  cudaError_t rc = cudaSetDevice(device);
  if (rc == cudaSuccess) rc = cudaMemGetInfo(&free_bytes, &total_bytes);
  if (rc != cudaSuccess) {
    cudaGetLastError();
    return "--mem cuda: cannot use CUDA device " + std::to_string(device) + " on host " + host_name() + ": " +
           cudaGetErrorString(rc);
  }
  const int sharing = (local_ranks + devices - 1) / devices;
  const double need = bytes_per_rank * sharing;
  if (need <= static_cast<double>(free_bytes)) return "";
  char msg[320];
  std::snprintf(msg, sizeof msg,
                "the largest size needs about %.2f GiB of device memory per rank, %.2f GiB for the %d ranks "
                "sharing device %d on %s, but only %.2f GiB is free; lower -e/--maxbytes",
                bytes_per_rank / (1 << 30), need / (1 << 30), sharing, device, host_name().c_str(),
                static_cast<double>(free_bytes) / (1 << 30));
  return msg;
#else
  (void)local_rank;
  (void)local_ranks;
  (void)bytes_per_rank;
  return "--mem cuda needs a build with CUDA (SMDDP_WITH_CUDA)";
#endif
}

}  // namespace smddp::bench
