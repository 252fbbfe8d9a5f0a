// smddp-micro-cuda: the device reduction kernels against a device-to-device
// copy kernel (cuda::copy, on the SMs like the reductions; cudaMemcpyAsync,
// which may use a copy engine, is a reference row), and host-device staging
// bandwidth, on one GPU. It prints numbers; e2e_gpu_micro_smoke asserts on
// its rows, scripts/device-check.sh tabulates them.
//
// Bandwidths are device-memory traffic per second: a copy of B bytes moves 2B
// (read and write), reduce_into 3B (two reads, one write), a k-source reduce
// (k+1)B, divide 2B. "of copy" is a kernel's traffic rate over the copy's, the
// fraction docs/gpu.md sets a target for (>= 0.80). Staging rows are bytes
// through the PCIe/C2C link per second: h2d, d2h, and the cuda_staged copy
// pipeline (chunks down on one stream while earlier chunks go up on another,
// through pinned memory, without the host collective).
//
// Usage: smddp-micro-cuda [--bytes N] [--iters N] [--quick]
// Exit: 0 done, 77 no CUDA device (and nvidia-smi lists none), 1 error.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cuda/kernels.h"
#include "cuda/runtime.h"
#include "smddp/types.h"

namespace {

using namespace smddp;

struct Options {
  size_t bytes = size_t{256} << 20;  // per buffer: well past the L2 cache
  int iters = 20;
};

struct Timer {
  cudaEvent_t start{}, stop{};
  Timer() {
    cuda::check(cudaEventCreate(&start), "cudaEventCreate");
    cuda::check(cudaEventCreate(&stop), "cudaEventCreate");
  }
  ~Timer() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
};

// Median seconds of one run of `body` on `stream` over `iters` runs.
template <typename Body>
double median_seconds(int iters, cudaStream_t stream, Body body) {
  Timer t;
  for (int w = 0; w < 2; ++w) body();
  cuda::check(cudaStreamSynchronize(stream), "warm-up");
  std::vector<double> s;
  for (int i = 0; i < iters; ++i) {
    cuda::check(cudaEventRecord(t.start, stream), "cudaEventRecord");
    body();
    cuda::check(cudaEventRecord(t.stop, stream), "cudaEventRecord");
    cuda::check(cudaEventSynchronize(t.stop), "cudaEventSynchronize");
    float ms = 0;
    cuda::check(cudaEventElapsedTime(&ms, t.start, t.stop), "cudaEventElapsedTime");
    s.push_back(ms / 1e3);
  }
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

void row(const std::string& name, double gbps, double copy_gbps) {
  if (copy_gbps > 0) {
    std::printf("%-40s %10.1f %8.2f\n", name.c_str(), gbps, gbps / copy_gbps);
  } else {
    std::printf("%-40s %10.1f %8s\n", name.c_str(), gbps, "-");
  }
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      o.bytes = size_t{8} << 20;
      o.iters = 3;
    } else if (a == "--bytes" && i + 1 < argc) {
      o.bytes = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--iters" && i + 1 < argc) {
      o.iters = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: smddp-micro-cuda [--bytes N] [--iters N] [--quick]\n");
      std::exit(64);
    }
  }
  o.bytes = std::max<size_t>(o.bytes & ~size_t{255}, 1 << 20);
  return o;
}

int run(const Options& o) {
  int device = 0;
  cuda::check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  cuda::check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  constexpr int kSources = 8;
  std::vector<char*> buf(kSources + 1);
  for (auto& b : buf) {
    void* p = nullptr;
    cuda::check(cudaMalloc(&p, o.bytes), "cudaMalloc");
    b = static_cast<char*>(p);
    cuda::check(cudaMemset(b, 0, o.bytes), "cudaMemset");
  }
  cuda::Stream stream_holder;
  const cudaStream_t s = stream_holder.get();
  const double b = static_cast<double>(o.bytes);
  std::printf("# device %d: %s (sm_%d%d, %d SMs), %zu MiB per buffer, median of %d\n", device, prop.name, prop.major,
              prop.minor, prop.multiProcessorCount, o.bytes >> 20, o.iters);
  std::printf("%-40s %10s %8s\n", "# test", "GB/s", "of copy");

  // The baseline is a copy kernel: a streaming kernel on the SMs, like the
  // reductions. cudaMemcpyAsync may run on a copy engine, which is another
  // ceiling; it is printed for reference.
  const double copy = 2 * b / median_seconds(o.iters, s, [&] { cuda::copy(buf[0], buf[1], o.bytes, s); }) / 1e9;
  row("d2d copy (copy kernel)", copy, copy);
  const double memcpy_gbps = 2 * b / median_seconds(o.iters, s, [&] {
    cuda::check(cudaMemcpyAsync(buf[0], buf[1], o.bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
  }) / 1e9;
  row("d2d cudaMemcpyAsync", memcpy_gbps, copy);

  for (DataType t : all_dtypes()) {
    const size_t count = o.bytes / dtype_size(t);
    const double gbps = 3 * b / median_seconds(o.iters, s, [&] { cuda::reduce_into(buf[0], buf[1], count, t, ReduceOp::Sum, s); }) / 1e9;
    row("reduce_into sum " + std::string(to_string(t)), gbps, copy);
  }
  const size_t f32 = o.bytes / 4;
  for (ReduceOp op : {ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max}) {
    const double gbps = 3 * b / median_seconds(o.iters, s, [&] { cuda::reduce_into(buf[0], buf[1], f32, DataType::Float32, op, s); }) / 1e9;
    row("reduce_into " + std::string(to_string(op)) + " float32", gbps, copy);
  }
  {
    const void* srcs[kSources];
    for (int i = 0; i < kSources; ++i) srcs[i] = buf[i + 1];
    const double gbps = (kSources + 1) * b / median_seconds(o.iters, s, [&] {
      cuda::reduce(buf[0], srcs, kSources, f32, DataType::Float32, ReduceOp::Sum, s);
    }) / 1e9;
    row("reduce 8 sources sum float32", gbps, copy);
  }
  {
    const double gbps = 2 * b / median_seconds(o.iters, s, [&] { cuda::divide(buf[0], f32, DataType::Float32, 3, s); }) / 1e9;
    row("divide float32", gbps, copy);
  }

  // Staging through pinned host memory.
  cuda::PinnedBuffer pinned;
  char* host = pinned.get(o.bytes);
  std::memset(host, 0, o.bytes);
  const double h2d = b / median_seconds(o.iters, s, [&] {
    cuda::check(cudaMemcpyAsync(buf[0], host, o.bytes, cudaMemcpyHostToDevice, s), "h2d");
  }) / 1e9;
  row("h2d pinned", h2d, 0);
  const double d2h = b / median_seconds(o.iters, s, [&] {
    cuda::check(cudaMemcpyAsync(host, buf[1], o.bytes, cudaMemcpyDeviceToHost, s), "d2h");
  }) / 1e9;
  row("d2h pinned", d2h, 0);
  {
    // The cuda_staged pipeline without the host step: chunk k goes down on
    // `s` while chunk k-1 goes up on `up`, through two pinned slots.
    const size_t chunk = std::min<size_t>(size_t{4} << 20, o.bytes);
    cuda::PinnedBuffer slots;
    char* slot = slots.get(2 * chunk);
    cuda::Stream up_holder;
    const cudaStream_t up = up_holder.get();
    cuda::Event down_done[2], up_done[2];
    const double secs = median_seconds(o.iters, s, [&] {
      for (size_t off = 0, k = 0; off < o.bytes; off += chunk, ++k) {
        const size_t len = std::min(chunk, o.bytes - off);
        char* h = slot + (k % 2) * chunk;
        if (k >= 2) cuda::check(cudaStreamWaitEvent(s, up_done[k % 2].get(), 0), "wait");
        cuda::check(cudaMemcpyAsync(h, buf[1] + off, len, cudaMemcpyDeviceToHost, s), "d2h");
        down_done[k % 2].record(s);
        cuda::check(cudaStreamWaitEvent(up, down_done[k % 2].get(), 0), "wait");
        cuda::check(cudaMemcpyAsync(buf[0] + off, h, len, cudaMemcpyHostToDevice, up), "h2d");
        up_done[k % 2].record(up);
      }
      // The timing events are on `s`: end after the last chunk went up.
      cuda::check(cudaStreamWaitEvent(s, up_done[0].get(), 0), "wait");
      cuda::check(cudaStreamWaitEvent(s, up_done[1].get(), 0), "wait");
    });
    row("staged d2h+h2d, 4 MiB chunks, 2 streams", b / secs / 1e9, 0);
  }
  for (auto* p : buf) cudaFree(p);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::string why;
  if (cuda::device_count(&why) == 0) {
    // A GPU that nvidia-smi lists but the runtime cannot use is a failure.
    int listed = 0;
    if (FILE* p = popen("nvidia-smi -L 2>/dev/null", "r")) {
      char line[512];
      while (std::fgets(line, sizeof line, p)) listed += std::strncmp(line, "GPU ", 4) == 0;
      pclose(p);
    }
    if (listed > 0) {
      std::printf("FAIL: nvidia-smi -L lists %d GPU(s) but the CUDA runtime reports none (%s)\n", listed, why.c_str());
      return 1;
    }
    std::printf("SKIP: no CUDA device (%s)\n", why.c_str());
    return 77;
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "smddp-micro-cuda: %s\n", e.what());
    return 1;
  }
}
