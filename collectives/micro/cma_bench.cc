// The kernel's cross-process copies (process_vm_readv/writev, what the cma
// algorithms and Open MPI's vader CMA use) against a user-space memcpy of
// the same bytes, on 4 KiB pages and on transparent huge pages.
//
// A copy moves a 64 MiB buffer in 128 KiB pieces (the cma allreduce's
// chunk) to or from a cache-resident 128 KiB buffer, as the algorithm does.
// The process copies its own memory (pid = getpid()): the kernel walks and
// pins the remote pages the same way for any process. Bytes processed count
// each byte once (the big buffer's side); Google Benchmark reports them per
// second.
//
//   smddp-micro-cma                       (pages:0 = 4 KiB, pages:1 = huge)
#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace {

constexpr size_t kBytes = size_t{64} << 20;
constexpr size_t kChunk = size_t{128} << 10;
constexpr size_t kHuge = size_t{2} << 20;

// One anonymous mapping, 2 MiB aligned, on huge pages when asked, touched.
class Mapping {
 public:
  Mapping(size_t bytes, bool huge) : mapped_(bytes + kHuge) {
    map_ = static_cast<char*>(mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (map_ == MAP_FAILED) std::abort();
    base_ = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(map_) + kHuge - 1) / kHuge * kHuge);
    madvise(base_, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    std::memset(base_, 1, bytes);
  }
  ~Mapping() { munmap(map_, mapped_); }
  char* data() const { return base_; }

 private:
  size_t mapped_;
  char* map_ = nullptr;
  char* base_ = nullptr;
};

enum class Copy { KernelRead, KernelWrite, Memcpy };

void run(benchmark::State& state, Copy how) {
  const bool huge = state.range(0) != 0;
  Mapping big(kBytes, huge);
  Mapping hot(kHuge, false);
  const pid_t self = getpid();
  for (auto _ : state) {
    for (size_t off = 0; off < kBytes; off += kChunk) {
      iovec local{hot.data(), kChunk}, remote{big.data() + off, kChunk};
      ssize_t moved = static_cast<ssize_t>(kChunk);
      if (how == Copy::KernelRead) moved = process_vm_readv(self, &local, 1, &remote, 1, 0);
      if (how == Copy::KernelWrite) moved = process_vm_writev(self, &local, 1, &remote, 1, 0);
      if (how == Copy::Memcpy) std::memcpy(big.data() + off, hot.data(), kChunk);
      if (moved != static_cast<ssize_t>(kChunk)) {
        state.SkipWithError("process_vm_readv/writev failed (ptrace scope, seccomp?)");
        return;
      }
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBytes));
}

void BM_kernel_read(benchmark::State& s) { run(s, Copy::KernelRead); }
void BM_kernel_write(benchmark::State& s) { run(s, Copy::KernelWrite); }
void BM_memcpy_write(benchmark::State& s) { run(s, Copy::Memcpy); }

BENCHMARK(BM_kernel_read)->ArgName("pages")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_kernel_write)->ArgName("pages")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_memcpy_write)->ArgName("pages")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
