// Throughput of the host reduction kernels on each ISA path the CPU runs,
// beside memcpy of the same size: a reduction streams nsrc buffers in and one
// out, so for large sizes memory bandwidth, not arithmetic, is the bound, and
// memcpy shows where that bound is on this machine.
//
// A size is the bytes of one buffer (each source and the destination).
// Bytes processed count every byte read and written: (nsrc + 1) * size for a
// reduction, 2 * size for memcpy. Google Benchmark reports them per second.
//
//   smddp-micro-reduce --benchmark_filter='float/sum/src:2/'
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "smddp/types.h"

namespace {

using smddp::DataType;
using smddp::ReduceOp;
using smddp::kernels::KernelTable;

constexpr int64_t kMinBytes = int64_t{4} << 10;
constexpr int64_t kMaxBytes = int64_t{64} << 20;
constexpr const char* kIsas[] = {"avx512", "avx2", "generic"};
constexpr DataType kDtypes[] = {DataType::Float32, DataType::Bfloat16, DataType::Float16,
                                DataType::Int32};
constexpr ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Max};
constexpr int kSourceCounts[] = {2, 4};

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<std::byte[], FreeDeleter>;

// Cache-line aligned, every page touched before timing starts.
Buffer make_buffer(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  Buffer buf(static_cast<std::byte*>(std::aligned_alloc(64, rounded)));
  if (!buf) std::abort();
  std::memset(buf.get(), 0, rounded);
  return buf;
}

// Small finite values (no NaN or subnormal slow paths), varied per element.
void fill(std::byte* buf, size_t count, DataType dtype, int seed) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = static_cast<float>((i * 7 + seed) % 251) * 0.25f;
  const KernelTable& convert = smddp::kernels::generic::kTable;
  switch (dtype) {
    case DataType::Float32:
      std::memcpy(buf, values.data(), count * sizeof(float));
      break;
    case DataType::Float16:
      convert.float_to_f16(values.data(), reinterpret_cast<uint16_t*>(buf), count);
      break;
    case DataType::Bfloat16:
      convert.float_to_bf16(values.data(), reinterpret_cast<uint16_t*>(buf), count);
      break;
    default:
      for (size_t i = 0; i < count; ++i) {
        const auto v = static_cast<int32_t>(values[i] * 4);
        std::memcpy(buf + i * sizeof v, &v, sizeof v);
      }
  }
}

void reduce_benchmark(benchmark::State& state, const KernelTable* table, DataType dtype,
                      ReduceOp op, int nsrc) {
  const auto bytes = static_cast<size_t>(state.range(0));
  const size_t count = bytes / smddp::dtype_size(dtype);
  std::vector<Buffer> srcs;
  std::vector<const void*> ptrs;
  for (int s = 0; s < nsrc; ++s) {
    srcs.push_back(make_buffer(bytes));
    fill(srcs.back().get(), count, dtype, s);
    ptrs.push_back(srcs.back().get());
  }
  Buffer dst = make_buffer(bytes);
  const auto kernel = table->reduce[static_cast<int>(dtype)][static_cast<int>(op)];
  for (auto _ : state) {
    kernel(dst.get(), ptrs.data(), nsrc, count);
    benchmark::DoNotOptimize(dst.get());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes) * (nsrc + 1));
}

void memcpy_benchmark(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  Buffer src = make_buffer(bytes);
  Buffer dst = make_buffer(bytes);
  fill(src.get(), bytes / sizeof(float), DataType::Float32, 0);
  for (auto _ : state) {
    std::memcpy(dst.get(), src.get(), bytes);
    benchmark::DoNotOptimize(dst.get());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes) * 2);
}

void register_benchmarks() {
  benchmark::RegisterBenchmark("memcpy", memcpy_benchmark)
      ->RangeMultiplier(4)
      ->Range(kMinBytes, kMaxBytes);
  for (const char* isa : kIsas) {
    const KernelTable* table = smddp::kernels::kernel_table(isa);
    if (table == nullptr) continue;  // the CPU lacks this path
    for (DataType dtype : kDtypes) {
      for (ReduceOp op : kOps) {
        for (int nsrc : kSourceCounts) {
          const std::string name =
              "reduce/" + std::string(isa) + "/" + std::string(smddp::to_string(dtype)) + "/" +
              std::string(smddp::to_string(op)) + "/src:" + std::to_string(nsrc);
          benchmark::RegisterBenchmark(name.c_str(), reduce_benchmark, table, dtype, op, nsrc)
              ->RangeMultiplier(4)
              ->Range(kMinBytes, kMaxBytes);
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
