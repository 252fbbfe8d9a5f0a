#include "backends/device_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#if SMDDP_CUDA_ENABLED
#include <cuda_runtime_api.h>
#endif

#include "backends/mpi_tuned.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "smddp/tools/nvml.h"

namespace smddp::bench {
namespace {

double now_us() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  return host;
}

bool uses_nccl(const BenchOptions& o) {
  return std::find(o.backends.begin(), o.backends.end(), "nccl") != o.backends.end();
}

// Bytes of [p, p + len) that the kernel backs with huge pages, from
// /proc/self/smaps (a mapping's AnonHugePages, in proportion to its overlap).
size_t huge_backed_bytes(const void* p, size_t len) {
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = lo + len;
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  uintptr_t start = 0, end = 0;
  double backed = 0;
  while (std::getline(smaps, line)) {
    unsigned long a = 0, b = 0, kb = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &a, &b) == 2 && line.find(' ') > line.find('-')) {
      start = a;
      end = b;
    } else if (std::sscanf(line.c_str(), "AnonHugePages: %lu kB", &kb) == 1 && kb > 0) {
      const uintptr_t overlap_lo = std::max(lo, start), overlap_hi = std::min(hi, end);
      if (overlap_hi > overlap_lo) {
        backed += kb * 1024.0 * static_cast<double>(overlap_hi - overlap_lo) / static_cast<double>(end - start);
      }
    }
  }
  return static_cast<size_t>(backed);
}

// Anonymous host memory, touched once here so the first row does not pay
// for page faults. With `huge`, 2 MiB aligned and advised onto transparent
// huge pages: the kernel's cross-process copies (cma, Open MPI's vader CMA)
// pin and map memory page by page, and run 1.9-2.8x faster on 2 MiB pages
// (docs/performance-history.md, "Inside a node: the kernel's page walk").
class HostMemory {
 public:
  HostMemory(size_t bytes, bool huge) : bytes_(round_up(std::max<size_t>(bytes, 1), huge ? kHuge : 4096)) {
    // Map one huge page more than needed, so an aligned start fits.
    const size_t mapped = bytes_ + (huge ? kHuge : 0);
    void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      throw Error("cannot map " + std::to_string(bytes_) + " bytes of host buffers: " + std::strerror(errno));
    }
    map_ = static_cast<char*>(p);
    mapped_ = mapped;
    base_ = huge ? reinterpret_cast<char*>(round_up(reinterpret_cast<uintptr_t>(map_), kHuge)) : map_;
    if (huge) madvise(base_, bytes_, MADV_HUGEPAGE);  // a hint: smaps tells what the kernel gave
    std::memset(base_, 1, bytes_);
  }
  ~HostMemory() { munmap(map_, mapped_); }
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;
  char* data() const { return base_; }
  size_t bytes() const { return bytes_; }

 private:
  static constexpr size_t kHuge = size_t{2} << 20;
  static size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }
  size_t bytes_;
  size_t mapped_ = 0;
  char* map_ = nullptr;
  char* base_ = nullptr;
};

class HostBuffers final : public SweepBuffers {
 public:
  HostBuffers(size_t send_bytes, size_t recv_bytes, bool huge) : send_(send_bytes, huge), recv_(recv_bytes, huge) {}
  char* send() override { return send_.data(); }
  char* recv() override { return recv_.data(); }
  void fill_send(const DataSpec& s, int rank, void* p, size_t count) override {
    bench::fill_send(s, rank, p, count);
  }
  void poison(void* p, size_t bytes) override { std::memset(p, 0xA5, bytes); }
  size_t count_wrong(const DataSpec& s, int rank, const void* p, size_t count, size_t) override {
    return bench::count_wrong(s, rank, p, count);
  }
  const char* output(const void* p, size_t) override { return static_cast<const char*>(p); }
  double time_us(Backend& backend, const CollectiveArgs& args) override {
    const double t0 = now_us();
    backend.run(args);
    backend.sync();
    return now_us() - t0;
  }
  double huge_page_fraction() const override {
    const double total = static_cast<double>(send_.bytes() + recv_.bytes());
    return static_cast<double>(huge_backed_bytes(send_.data(), send_.bytes()) +
                               huge_backed_bytes(recv_.data(), recv_.bytes())) / total;
  }

 private:
  HostMemory send_, recv_;
};

#if SMDDP_CUDA_ENABLED

void check(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return;
  cudaGetLastError();
  throw Error(std::string(what) + ": " + cudaGetErrorString(rc));
}

// A CUDA error while waiting for device work is a device failure: exit 3
// (docs/gpu.md), like a transport failure, not exit 4.
void check_wait(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return;
  cudaGetLastError();
  throw TransportError(std::string(what) + ": " + cudaGetErrorName(rc) + ": " + cudaGetErrorString(rc));
}

void* allocate(size_t bytes, const char* what) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), what);
  return p;
}

// Every harness operation (fill, poison, read back) runs on the harness's own
// stream and is waited for before it returns. Backends run on streams of
// their own (NCCL's is cudaStreamNonBlocking, which does not wait for the
// legacy default stream), so nothing the harness queued may still be in
// flight when the backend starts: ordering is explicit, never implied.
class DeviceBuffers final : public SweepBuffers {
 public:
  DeviceBuffers(size_t send_bytes, size_t recv_bytes) : shadow_bytes_(std::max(send_bytes, recv_bytes)) {
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
    send_ = static_cast<char*>(allocate(send_bytes, "cudaMalloc of the send buffer"));
    recv_ = static_cast<char*>(allocate(recv_bytes, "cudaMalloc of the receive buffer"));
    void* shadow = nullptr;
    // Pinned: asynchronous copies from and to it really are asynchronous.
    check(cudaMallocHost(&shadow, std::max<size_t>(shadow_bytes_, 1)), "cudaMallocHost of the host shadow buffer");
    shadow_ = static_cast<char*>(shadow);
    check(cudaMemsetAsync(send_, 1, send_bytes, stream_), "cudaMemsetAsync");
    check(cudaMemsetAsync(recv_, 1, recv_bytes, stream_), "cudaMemsetAsync");
    finish("cudaStreamSynchronize after the first fill");
  }
  ~DeviceBuffers() override {
    if (stream_) cudaStreamSynchronize(stream_);
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
    cudaFree(send_);
    cudaFree(recv_);
    cudaFreeHost(shadow_);
  }

  char* send() override { return send_; }
  char* recv() override { return recv_; }

  void fill_send(const DataSpec& s, int rank, void* p, size_t count) override {
    bench::fill_send(s, rank, shadow_, count);
    check(cudaMemcpyAsync(p, shadow_, count * dtype_size(s.dtype), cudaMemcpyHostToDevice, stream_),
          "cudaMemcpyAsync of inputs");
    finish("cudaStreamSynchronize after the input fill");
  }
  void poison(void* p, size_t bytes) override {
    check(cudaMemsetAsync(p, 0xA5, bytes, stream_), "cudaMemsetAsync");
    finish("cudaStreamSynchronize after the output poison");
  }
  size_t count_wrong(const DataSpec& s, int rank, const void* p, size_t count, size_t elements) override {
    check(cudaMemcpyAsync(shadow_, p, elements * dtype_size(s.dtype), cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync of outputs");
    finish("cudaStreamSynchronize after reading the outputs");
    return bench::count_wrong(s, rank, shadow_, count);
  }
  const char* output(const void* p, size_t bytes) override {
    check(cudaMemcpyAsync(shadow_, p, bytes, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync of outputs");
    finish("cudaStreamSynchronize after reading the outputs");
    return shadow_;
  }

  double time_us(Backend& backend, const CollectiveArgs& args) override {
    auto* stream = backend.stream() ? static_cast<cudaStream_t>(backend.stream()) : stream_;
    check(cudaEventRecord(start_, stream), "cudaEventRecord");
    backend.run(args);
    check(cudaEventRecord(stop_, stream), "cudaEventRecord");
    backend.sync();
    check_wait(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e3;
  }

 private:
  void finish(const char* what) { check_wait(cudaStreamSynchronize(stream_), what); }

  char* send_ = nullptr;
  char* recv_ = nullptr;
  size_t shadow_bytes_;
  char* shadow_ = nullptr;  // inputs made and outputs checked here
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

#endif  // SMDDP_CUDA_ENABLED

}  // namespace

std::unique_ptr<SweepBuffers> SweepBuffers::create(MemoryKind kind, size_t send_bytes, size_t recv_bytes,
                                                   bool huge_pages) {
#if SMDDP_CUDA_ENABLED
  if (kind == MemoryKind::Cuda) return std::make_unique<DeviceBuffers>(send_bytes, recv_bytes);
#endif
  if (kind != MemoryKind::Host) throw UsageError("--mem cuda needs a build with CUDA (SMDDP_WITH_CUDA)");
  return std::make_unique<HostBuffers>(send_bytes, recv_bytes, huge_pages);
}

int cuda_device_count(std::string* why) {
#if SMDDP_CUDA_ENABLED
  int n = 0;
  const cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) {
    cudaGetLastError();
    if (why) *why = std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc);
    return 0;
  }
  if (n == 0 && why) *why = "the CUDA runtime reports no device";
  return n;
#else
  if (why) *why = "built without CUDA";
  return 0;
#endif
}

namespace {

// NVML's device count (common/'s loader); -1 when NVML cannot be loaded,
// initialised or asked.
int nvml_gpus() {
  std::string why;
  const auto nvml = tools::Nvml::open(config::text("SMDDP_NVML_LIBRARY"), &why);
  if (!nvml) return -1;
  try {
    return nvml->device_count();
  } catch (const Error&) {
    return -1;
  }
}

// Lines "GPU <i>: ..." of `nvidia-smi -L`; -1 when it cannot be run.
int nvidia_smi_gpus() {
  FILE* p = popen("nvidia-smi -L 2>/dev/null", "r");
  if (!p) return -1;
  int n = 0;
  char line[512];
  while (std::fgets(line, sizeof line, p)) {
    if (std::strncmp(line, "GPU ", 4) == 0) ++n;
  }
  const int status = pclose(p);
  return status == 0 || n > 0 ? n : -1;
}

}  // namespace

int listed_gpus(std::string* source) {
  if (const int n = nvml_gpus(); n > 0) {
    if (source) *source = "NVML";
    return n;
  }
  if (const int n = nvidia_smi_gpus(); n > 0) {
    if (source) *source = "nvidia-smi -L";
    return n;
  }
  return 0;
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
  for (const auto& b : o.backends) {
    if (is_mpi_backend(b)) {
      throw UsageError("--mem cuda: the mpi backend takes host buffers only; use --backend smddp,nccl");
    }
  }
#endif
}

void check_cuda_device(const BenchOptions& o) {
  if (o.mem != MemoryKind::Cuda) return;
  // Ordinals in PCI order, as nvidia-smi and NVML number the GPUs (CUDA's
  // default puts the fastest first): read at the runtime's initialisation.
  setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
  std::string why;
  if (cuda_device_count(&why) > 0) return;
  std::string source;
  if (const int listed = listed_gpus(&source); listed > 0) {
    throw TransportError("--mem cuda: " + source + " lists " + std::to_string(listed) + " GPU(s) on host " +
                         host_name() + " but the CUDA runtime cannot use them: " + why);
  }
  throw UsageError("--mem cuda: no CUDA device on host " + host_name() + " (" + why + ")");
}

std::string prepare_device(int host_rank, int host_ranks, double bytes_per_rank) {
#if SMDDP_CUDA_ENABLED
  std::string why;
  const int devices = cuda_device_count(&why);
  if (devices == 0) return "--mem cuda: no CUDA device on host " + host_name() + " (" + why + ")";
  const int device = host_rank % devices;
  size_t free_bytes = 0, total_bytes = 0;
  cudaError_t rc = cudaSetDevice(device);
  if (rc == cudaSuccess) rc = cudaMemGetInfo(&free_bytes, &total_bytes);
  if (rc != cudaSuccess) {
    cudaGetLastError();
    return "--mem cuda: cannot use CUDA device " + std::to_string(device) + " on host " + host_name() + ": " +
           cudaGetErrorString(rc);
  }
  // The ranks of this host with the same device: host ranks i = device mod devices.
  const int sharing = host_ranks / devices + (device < host_ranks % devices ? 1 : 0);
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
  (void)host_rank;
  (void)host_ranks;
  (void)bytes_per_rank;
  return "--mem cuda needs a build with CUDA (SMDDP_WITH_CUDA)";
#endif
}

}  // namespace smddp::bench
