// The device reduction kernels (cuda/kernels.h) against the host kernels
// (smddp/reduce.h), bit for bit, for every dtype and op: counts from 0 to
// about a million and a bit, 2 to kMaxSources sources, in place and out of
// place, aligned and misaligned pointers, and inputs that include NaNs,
// infinities, signed zeros, subnormals, overflow and integer wrap-around.
// The only tolerated difference is the one kernels.h documents: the payload
// of a NaN made by arithmetic (sum, prod, divide) on NaNs.
//
// Plain main, no gtest: scripts/device-check.sh builds it with nvcc and g++
// alone where CMake is missing. Exit 0 pass, 1 fail (also: nvidia-smi lists
// a GPU the runtime cannot use), 77 no CUDA device, 64 usage. Guard bytes
// around every buffer are compared after every case.
// Usage: cuda_kernels_test [--seed N] [--refusals-only]
#include <cuda_runtime_api.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "cuda/kernels.h"
#include "cuda/runtime.h"
#include "smddp/error.h"
#include "smddp/reduce.h"
#include "smddp/types.h"

namespace {

using namespace smddp;

constexpr size_t kLargest = (size_t{1} << 20) + 3;
constexpr size_t kSlack = 64;  // bytes before and after every buffer
constexpr unsigned char kGuard = 0xC3;  // what they hold, checked after every case

bool is_nan(DataType t, const unsigned char* p) {
  switch (t) {
    case DataType::Float16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
    }
    case DataType::Bfloat16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0;
    }
    case DataType::Float32: {
      uint32_t x;
      std::memcpy(&x, p, 4);
      return (x & 0x7fffffffu) > 0x7f800000u;
    }
    case DataType::Float64: {
      uint64_t x;
      std::memcpy(&x, p, 8);
      return (x & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    }
    case DataType::Float8E4M3: return (*p & 0x7fu) == 0x7fu;
    case DataType::Float8E5M2: return (*p & 0x7fu) > 0x7cu;
    default:
      return false;
  }
}

// Random bit patterns (every class of value, integer wrap-around), mixed
// with small values so that sums and products also stay finite and exact.
void fill(std::mt19937_64& rng, DataType t, unsigned char* p, size_t count) {
  const size_t es = dtype_size(t);
  for (size_t i = 0; i < count; ++i) {
    uint64_t bits = rng();
    if (dtype_is_float(t) && (bits & 3) != 0) {
      const double v = static_cast<double>(static_cast<int64_t>(bits >> 40) % 2001 - 1000) / 8;
      switch (t) {
        case DataType::Float64: std::memcpy(&bits, &v, 8); break;
        case DataType::Float32: {
          const float f = static_cast<float>(v);
          uint32_t u;
          std::memcpy(&u, &f, 4);
          bits = u;
          break;
        }
        case DataType::Bfloat16: {
          const float f = static_cast<float>(v);
          uint32_t u;
          std::memcpy(&u, &f, 4);
          bits = u >> 16;  // truncated: any bfloat16 value will do
          break;
        }
        default: {  // float16: v is exact in half precision
          const float f = static_cast<float>(v);
          uint32_t u;
          std::memcpy(&u, &f, 4);
          uint16_t h = static_cast<uint16_t>((u >> 16) & 0x8000u);
          if ((u & 0x7fffffffu) != 0) {
            const int e = static_cast<int>((u >> 23) & 0xff) - 127 + 15;
            h = static_cast<uint16_t>(h | (e << 10) | ((u >> 13) & 0x3ff));
          }
          bits = h;
        }
      }
    }
    std::memcpy(p + i * es, &bits, es);
  }
}

struct Device {
  std::vector<unsigned char*> bufs;
  explicit Device(int n, size_t bytes) : bufs(n) {
    for (auto& b : bufs) {
      void* p = nullptr;
      cuda::check(cudaMalloc(&p, bytes), "cudaMalloc");
      b = static_cast<unsigned char*>(p);
    }
  }
  ~Device() {
    for (auto* b : bufs) cudaFree(b);
  }
};

class Checker {
 public:
  explicit Checker(uint64_t seed) : seed_(seed), rng_(seed) {}

  // One case; returns false (and prints it) on a mismatch.
  bool reduce_case(DataType t, ReduceOp op, size_t count, int nsrc, bool in_place, size_t misalign, Device& dev) {
    const size_t es = dtype_size(t);
    const size_t bytes = count * es;
    std::vector<std::vector<unsigned char>> in(nsrc, std::vector<unsigned char>(bytes));
    for (auto& v : in) fill(rng_, t, v.data(), count);
    // misalign: the first source is shifted by `misalign` elements from the
    // others (0: all aligned, vector path; 1 element on all: the head path).
    std::vector<const void*> dsrc(nsrc), hsrc(nsrc);
    // Guard bytes around every buffer: a kernel writing outside its range fails.
    for (int b = 0; b <= nsrc; ++b) {
      cuda::check(cudaMemset(dev.bufs[b], kGuard, bytes + es + 2 * kSlack), "cudaMemset of guards");
    }
    for (int s = 0; s < nsrc; ++s) {
      const size_t shift = (misalign == 2 && s == 1) ? es : (misalign == 1 ? es : 0);
      unsigned char* d = dev.bufs[s + 1] + kSlack + shift;
      cuda::check(cudaMemcpy(d, in[s].data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
      dsrc[s] = d;
      hsrc[s] = in[s].data();
    }
    const size_t dshift = misalign == 1 ? es : 0;
    void* ddst = in_place ? const_cast<void*>(dsrc[0]) : dev.bufs[0] + kSlack + dshift;
    std::vector<unsigned char> expect(bytes);
    if (in_place) {
      std::memcpy(expect.data(), in[0].data(), bytes);
      hsrc[0] = expect.data();
      reduce(expect.data(), hsrc.data(), nsrc, count, t, op);
    } else {
      reduce(expect.data(), hsrc.data(), nsrc, count, t, op);
    }
    cuda::reduce(ddst, dsrc.data(), nsrc, count, t, op, nullptr);
    cuda::check(cudaDeviceSynchronize(), "reduce kernel");
    std::vector<unsigned char> got(bytes);
    cuda::check(cudaMemcpy(got.data(), ddst, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    const bool arithmetic = op == ReduceOp::Sum || op == ReduceOp::Prod || op == ReduceOp::Avg;
    char what[160];
    std::snprintf(what, sizeof what, "reduce %s %s count %zu sources %d %s misalign %zu",
                  std::string(to_string(t)).c_str(), std::string(to_string(op)).c_str(), count, nsrc,
                  in_place ? "in-place" : "out-of-place", misalign);
    bool ok = compare(t, expect, got, arithmetic, what);
    ok &= guards_intact(static_cast<unsigned char*>(ddst), bytes, what);
    for (int s = 0; s < nsrc; ++s) {  // the sources are read only: their guards too
      ok &= guards_intact(static_cast<unsigned char*>(const_cast<void*>(dsrc[s])), bytes, what);
    }
    return ok;
  }

  bool divide_case(DataType t, size_t count, int divisor, Device& dev) {
    const size_t es = dtype_size(t);
    const size_t bytes = count * es;
    std::vector<unsigned char> expect(bytes);
    fill(rng_, t, expect.data(), count);
    unsigned char* d = dev.bufs[0] + kSlack + es;  // misaligned by one element
    cuda::check(cudaMemset(dev.bufs[0], kGuard, bytes + es + 2 * kSlack), "cudaMemset of guards");
    cuda::check(cudaMemcpy(d, expect.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    divide(expect.data(), count, t, divisor);
    cuda::divide(d, count, t, divisor, nullptr);
    cuda::check(cudaDeviceSynchronize(), "divide kernel");
    std::vector<unsigned char> got(bytes);
    cuda::check(cudaMemcpy(got.data(), d, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    char what[120];
    std::snprintf(what, sizeof what, "divide %s count %zu by %d", std::string(to_string(t)).c_str(), count, divisor);
    const bool ok = compare(t, expect, got, true, what);
    return guards_intact(d, bytes, what) && ok;
  }

  // The kSlack bytes before p and after p + bytes still hold kGuard.
  bool guards_intact(unsigned char* p, size_t bytes, const char* what) {
    std::vector<unsigned char> before(kSlack), after(kSlack);
    cuda::check(cudaMemcpy(before.data(), p - kSlack, kSlack, cudaMemcpyDeviceToHost), "cudaMemcpy of guards");
    cuda::check(cudaMemcpy(after.data(), p + bytes, kSlack, cudaMemcpyDeviceToHost), "cudaMemcpy of guards");
    for (size_t i = 0; i < kSlack; ++i) {
      if (before[i] != kGuard || after[i] != kGuard) {
        std::printf("FAIL: %s: guard byte %s the buffer overwritten at distance %zu (seed %" PRIu64 ")\n", what,
                    before[i] != kGuard ? "before" : "after", before[i] != kGuard ? kSlack - i : i + 1, seed_);
        return false;
      }
    }
    return true;
  }

 private:
  bool compare(DataType t, const std::vector<unsigned char>& expect, const std::vector<unsigned char>& got,
               bool nan_payload_free, const char* what) {
    const size_t es = dtype_size(t);
    size_t wrong = 0, first = 0;
    for (size_t i = 0; i < expect.size() / es; ++i) {
      const unsigned char* e = expect.data() + i * es;
      const unsigned char* g = got.data() + i * es;
      if (std::memcmp(e, g, es) == 0) continue;
      if (nan_payload_free && is_nan(t, e) && is_nan(t, g)) continue;
      if (wrong++ == 0) first = i;
    }
    if (wrong == 0) return true;
    uint64_t ev = 0, gv = 0;
    std::memcpy(&ev, expect.data() + first * es, es);
    std::memcpy(&gv, got.data() + first * es, es);
    std::printf("FAIL: %s: %zu wrong, first at %zu: host 0x%" PRIx64 " device 0x%" PRIx64 " (seed %" PRIu64 ")\n",
                what, wrong, first, ev, gv, seed_);
    return false;
  }

  uint64_t seed_;
  std::mt19937_64 rng_;
};

int run(uint64_t seed) {
  Device dev(cuda::kMaxSources + 1, kLargest * 8 + 2 * kSlack);
  Checker check(seed);
  int failures = 0, cases = 0;
  const size_t counts[] = {0, 1, 2, 7, 33, 1000, 4099};
  for (DataType t : all_dtypes()) {
    for (ReduceOp op : all_ops()) {
      for (size_t count : counts) {
        for (int nsrc : {2, 3, cuda::kMaxSources}) {
          for (bool in_place : {false, true}) {
            for (size_t misalign : {0, 1, 2}) {
              failures += !check.reduce_case(t, op, count, nsrc, in_place, misalign, dev);
              ++cases;
            }
          }
        }
      }
      // Large: many blocks, the grid-stride loop and the unrolled vectors.
      failures += !check.reduce_case(t, op, kLargest, 2, false, 0, dev);
      failures += !check.reduce_case(t, op, kLargest, 8, true, 1, dev);
      cases += 2;
    }
    for (int divisor : {1, 3, 8}) {
      for (size_t count : {size_t{1}, size_t{4099}, kLargest}) {
        failures += !check.divide_case(t, count, divisor, dev);
        ++cases;
      }
    }
  }
  std::printf("%d cases, %d failed, seed %" PRIu64 "\n", cases, failures, seed);
  return failures ? 1 : 0;
}

// "GPU <i>: ..." lines of `nvidia-smi -L`; 0 when it is absent.
int nvidia_smi_gpus() {
  FILE* p = popen("nvidia-smi -L 2>/dev/null", "r");
  if (!p) return 0;
  int n = 0;
  char line[512];
  while (std::fgets(line, sizeof line, p)) n += std::strncmp(line, "GPU ", 4) == 0;
  pclose(p);
  return n;
}

bool refuses_misaligned() {
  void* buf = nullptr;
  cuda::check(cudaMalloc(&buf, 64), "cudaMalloc");
  auto* odd = static_cast<unsigned char*>(buf) + 1;
  bool ok = true;
  try {
    cuda::reduce_into(odd, buf, 4, DataType::Float32, ReduceOp::Sum, nullptr);
    std::printf("FAIL: reduce_into accepted a float32 pointer 1 byte off its alignment\n");
    ok = false;
  } catch (const Error&) {
  }
  cudaFree(buf);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t seed = std::random_device{}();
  bool refusals_only = false;  // e2e_gpu_fake_kernel_refusals: no kernel runs
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seed") == 0 && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (std::strcmp(argv[i], "--refusals-only") == 0) refusals_only = true;
    else {
      std::fprintf(stderr, "usage: cuda_kernels_test [--seed N] [--refusals-only]\n");
      return 64;
    }
  }
  std::string why;
  if (cuda::device_count(&why) == 0) {
    // Whether to skip is nvidia-smi's call, not the code under test's: a GPU
    // it lists that the runtime cannot use is a failure.
    if (const int listed = nvidia_smi_gpus(); listed > 0) {
      std::printf("FAIL: nvidia-smi -L lists %d GPU(s) but the CUDA runtime reports none (%s)\n", listed,
                  why.c_str());
      return 1;
    }
    std::printf("SKIP: no CUDA device (%s)\n", why.c_str());
    return 77;
  }
  // Element-misaligned pointers are refused before any launch (they would
  // fault on the GPU with "misaligned address").
  try {
    if (!refuses_misaligned()) return 1;
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
  if (refusals_only) {
    std::printf("misaligned pointers refused\n");
    return 0;
  }
  try {
    return run(seed);
  } catch (const std::exception& e) {
    std::printf("FAIL: %s (seed %" PRIu64 ")\n", e.what(), seed);
    return 1;
  }
}
