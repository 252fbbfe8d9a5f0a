// The device reduction kernels behind cuda/kernels.h.
//
// Vocabulary:
//  - vector: 16 bytes of elements, loaded and stored as one uint4-sized pack;
//  - head / tail: the elements before the first aligned vector and after the
//    last one, done one element per thread;
//  - format: how a stored element becomes the value it is combined in
//    (itself, or float for the 16- and 8-bit float types).
//
// One grid-stride kernel per (format, op); each thread keeps kUnroll vectors
// of every source in flight so the loads cover the memory latency. The
// element arithmetic (operators, Avg's division, bfloat16 and the NaN rules
// of float16) is kernels/reduce_ops.h's, the host kernels' own, so both give
// the same bits.
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "core/check.h"
#include "cuda/kernels.h"
#include "cuda/runtime.h"
#include "kernels/reduce_ops.h"
#include "smddp/error.h"

namespace smddp::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;
// 8 blocks of 256 threads fill an SM of sm_80/sm_90 (2048 resident threads).
constexpr int kBlocksPerSm = 8;
constexpr size_t kVectorBytes = 16;

namespace ops = kernels::ops;

template <typename T>
struct NativeFormat {
  using Storage = T;
  using Compute = T;
  __device__ static T widen(T x) { return x; }
  __device__ static T narrow(T x) { return x; }
};

// float16 through the conversion instructions, with NaNs handled as the
// host's F16C path does (reduce_ops.h): quieted, sign and top payload bits kept.
struct F16Format {
  using Storage = uint16_t;
  using Compute = float;
  __device__ static float widen(uint16_t h) {
    if (ops::f16_is_nan(h)) return __uint_as_float(ops::f16_nan_to_float_bits(h));
    return __half2float(__ushort_as_half(h));
  }
  __device__ static uint16_t narrow(float f) {
    const uint32_t x = __float_as_uint(f);
    if (ops::float_bits_is_nan(x)) return ops::float_nan_bits_to_f16(x);
    return __half_as_ushort(__float2half_rn(f));
  }
};

struct Bf16Format {
  using Storage = uint16_t;
  using Compute = float;
  __device__ static float widen(uint16_t h) { return ops::bf16_to_float(h); }
  __device__ static uint16_t narrow(float f) { return ops::float_to_bf16(f); }
};

// fp8 through CUDA's own conversions (hardware on sm_89 and later): exact
// widening, and narrowing with __NV_SATFINITE as NCCL does (nearest even,
// saturating at the largest finite value, NaN to 0x7f); reduce_ops.h's
// Fp8Layout, the host's conversion, gives the same bits.
template <__nv_fp8_interpretation_t kKind>
struct Fp8Format {
  using Storage = uint8_t;
  using Compute = float;
  __device__ static float widen(uint8_t c) { return __half2float(__half(__nv_cvt_fp8_to_halfraw(c, kKind))); }
  __device__ static uint8_t narrow(float f) { return __nv_cvt_float_to_fp8(f, __NV_SATFINITE, kKind); }
};

template <typename S>
struct alignas(kVectorBytes) Pack {
  S e[kVectorBytes / sizeof(S)];
};

struct Sources {
  const void* p[kMaxSources];
};

// Where the vectors are: elements [head, head + nvec * V) of every buffer.
struct Layout {
  size_t head = 0;
  size_t nvec = 0;
};

template <typename S>
__device__ const Pack<S>* vectors(const void* p, size_t head) {
  return reinterpret_cast<const Pack<S>*>(static_cast<const S*>(p) + head);
}

template <typename F, typename Op>
__global__ void __launch_bounds__(kThreads)
    reduce_kernel(void* dst, Sources srcs, int nsrc, size_t count, Layout layout) {
  using S = typename F::Storage;
  using C = typename F::Compute;
  constexpr int V = kVectorBytes / sizeof(S);
  const size_t tid = size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  S* d = static_cast<S*>(dst);
  Pack<S>* out = reinterpret_cast<Pack<S>*>(d + layout.head);

  for (size_t base = tid; base < layout.nvec; base += stride * kUnroll) {
    C acc[kUnroll][V] = {};
    const Pack<S>* first = vectors<S>(srcs.p[0], layout.head);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t k = base + u * stride;
      if (k < layout.nvec) {
        const Pack<S> p = first[k];
#pragma unroll
        for (int j = 0; j < V; ++j) acc[u][j] = F::widen(p.e[j]);
      }
    }
    for (int s = 1; s < nsrc; ++s) {
      const Pack<S>* src = vectors<S>(srcs.p[s], layout.head);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const size_t k = base + u * stride;
        if (k < layout.nvec) {
          const Pack<S> p = src[k];
#pragma unroll
          for (int j = 0; j < V; ++j) acc[u][j] = Op::apply(acc[u][j], F::widen(p.e[j]));
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t k = base + u * stride;
      if (k < layout.nvec) {
        Pack<S> p;
#pragma unroll
        for (int j = 0; j < V; ++j) p.e[j] = F::narrow(acc[u][j]);
        out[k] = p;
      }
    }
  }

  const size_t tail = layout.head + layout.nvec * V;
  const size_t scalars = layout.head + (count - tail);
  for (size_t k = tid; k < scalars; k += stride) {
    const size_t i = k < layout.head ? k : tail + (k - layout.head);
    C acc = F::widen(static_cast<const S*>(srcs.p[0])[i]);
    for (int s = 1; s < nsrc; ++s) acc = Op::apply(acc, F::widen(static_cast<const S*>(srcs.p[s])[i]));
    d[i] = F::narrow(acc);
  }
}

template <typename F>
__global__ void __launch_bounds__(kThreads) divide_kernel(void* dst, size_t count, Layout layout, int divisor) {
  using S = typename F::Storage;
  constexpr int V = kVectorBytes / sizeof(S);
  const size_t tid = size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  S* d = static_cast<S*>(dst);
  Pack<S>* vec = reinterpret_cast<Pack<S>*>(d + layout.head);
  for (size_t base = tid; base < layout.nvec; base += stride * kUnroll) {
    Pack<S> p[kUnroll] = {};
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (base + u * stride < layout.nvec) p[u] = vec[base + u * stride];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (base + u * stride < layout.nvec) {
#pragma unroll
        for (int j = 0; j < V; ++j) p[u].e[j] = F::narrow(ops::divided(F::widen(p[u].e[j]), divisor));
        vec[base + u * stride] = p[u];
      }
    }
  }
  const size_t tail = layout.head + layout.nvec * V;
  const size_t scalars = layout.head + (count - tail);
  for (size_t k = tid; k < scalars; k += stride) {
    const size_t i = k < layout.head ? k : tail + (k - layout.head);
    d[i] = F::narrow(ops::divided(F::widen(d[i]), divisor));
  }
}

// Vectors when every pointer has the destination's offset within a vector
// (and that offset is a whole number of elements); otherwise all scalar.
Layout layout_of(const void* dst, const void* const* srcs, int nsrc, size_t count, size_t esize) {
  const auto offset = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % kVectorBytes; };
  const size_t mis = offset(dst);
  bool aligned = mis % esize == 0;
  for (int s = 0; s < nsrc && aligned; ++s) aligned = offset(srcs[s]) == mis;
  if (!aligned) return {count, 0};
  const size_t head = std::min(count, (kVectorBytes - mis) % kVectorBytes / esize);
  return {head, (count - head) / (kVectorBytes / esize)};
}

int multiprocessors() {
  static std::atomic<int> cached[64] = {};
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  const bool cacheable = device >= 0 && device < 64;
  if (cacheable && cached[device].load(std::memory_order_relaxed) > 0) return cached[device];
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  if (cacheable) cached[device] = sms;
  return sms;
}

// Enough blocks for `items` thread-sized pieces of work, at most a full GPU.
unsigned grid_for(size_t items) {
  const size_t wanted = (items + kThreads - 1) / kThreads;
  const size_t most = static_cast<size_t>(multiprocessors()) * kBlocksPerSm;
  return static_cast<unsigned>(std::max<size_t>(1, std::min(wanted, most)));
}

size_t work_items(const Layout& l, size_t count, size_t esize) {
  const size_t scalars = count - l.nvec * (kVectorBytes / esize);
  return std::max((l.nvec + kUnroll - 1) / kUnroll, scalars);
}

using ReduceLaunch = void (*)(void*, const Sources&, int, size_t, const Layout&, unsigned, cudaStream_t);
using DivideLaunch = void (*)(void*, size_t, const Layout&, int, unsigned, cudaStream_t);

template <typename F, typename Op>
void launch_reduce(void* dst, const Sources& srcs, int nsrc, size_t count, const Layout& l, unsigned grid,
                   cudaStream_t stream) {
  reduce_kernel<F, Op><<<grid, kThreads, 0, stream>>>(dst, srcs, nsrc, count, l);
}

template <typename F>
void launch_divide(void* dst, size_t count, const Layout& l, int divisor, unsigned grid, cudaStream_t stream) {
  divide_kernel<F><<<grid, kThreads, 0, stream>>>(dst, count, l, divisor);
}

struct LaunchTable {
  ReduceLaunch reduce[kNumDataTypes][kNumReduceOps];
  DivideLaunch divide[kNumDataTypes];
};

// row[op] = the launch of op's operator, for every ReduceOp (Avg: the sum;
// divide() follows).
template <typename F, size_t... kOps>
constexpr void fill_ops(ReduceLaunch (&row)[kNumReduceOps], std::index_sequence<kOps...>) {
  ((row[kOps] = &launch_reduce<F, ops::OpFor<static_cast<ReduceOp>(kOps)>>), ...);
}

template <typename F>
constexpr void fill_row(LaunchTable& t, DataType dtype) {
  fill_ops<F>(t.reduce[static_cast<int>(dtype)], std::make_index_sequence<kNumReduceOps>{});
  t.divide[static_cast<int>(dtype)] = &launch_divide<F>;
}

constexpr LaunchTable make_table() {
  LaunchTable t{};
  fill_row<NativeFormat<int8_t>>(t, DataType::Int8);
  fill_row<NativeFormat<uint8_t>>(t, DataType::Uint8);
  fill_row<NativeFormat<int32_t>>(t, DataType::Int32);
  fill_row<NativeFormat<uint32_t>>(t, DataType::Uint32);
  fill_row<NativeFormat<int64_t>>(t, DataType::Int64);
  fill_row<NativeFormat<uint64_t>>(t, DataType::Uint64);
  fill_row<F16Format>(t, DataType::Float16);
  fill_row<Bf16Format>(t, DataType::Bfloat16);
  fill_row<NativeFormat<float>>(t, DataType::Float32);
  fill_row<NativeFormat<double>>(t, DataType::Float64);
  fill_row<Fp8Format<__NV_E4M3>>(t, DataType::Float8E4M3);
  fill_row<Fp8Format<__NV_E5M2>>(t, DataType::Float8E5M2);
  return t;
}

constexpr LaunchTable kTable = make_table();

// Element loads at an address that is not a multiple of the element size
// fault on the GPU ("misaligned address"): refuse such pointers up front.
void check_element_aligned(const void* p, size_t esize, const char* what) {
  if (reinterpret_cast<uintptr_t>(p) % esize != 0) {
    throw Error(std::string(what) + ": pointer " + std::to_string(reinterpret_cast<uintptr_t>(p)) +
                " is not aligned to its element size (" + std::to_string(esize) + " bytes)");
  }
}

}  // namespace

void reduce(void* dst, const void* const* srcs, int nsrc, size_t count, DataType dtype, ReduceOp op,
            cudaStream_t stream) {
  SMDDP_CHECK(nsrc >= 1 && nsrc <= kMaxSources);
  SMDDP_CHECK(static_cast<int>(dtype) < kNumDataTypes && static_cast<int>(op) < kNumReduceOps);
  if (count == 0) return;
  const size_t es = dtype_size(dtype);
  check_element_aligned(dst, es, "cuda::reduce");
  for (int i = 0; i < nsrc; ++i) check_element_aligned(srcs[i], es, "cuda::reduce");
  if (nsrc == 1) {
    if (dst != srcs[0]) check(cudaMemcpyAsync(dst, srcs[0], count * es, cudaMemcpyDefault, stream), "cudaMemcpyAsync");
    return;
  }
  Sources s{};
  for (int i = 0; i < nsrc; ++i) s.p[i] = srcs[i];
  const Layout l = layout_of(dst, srcs, nsrc, count, es);
  kTable.reduce[static_cast<int>(dtype)][static_cast<int>(op)](dst, s, nsrc, count, l,
                                                                grid_for(work_items(l, count, es)), stream);
  check(cudaGetLastError(), "reduction kernel launch");
}

void reduce_into(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op, cudaStream_t stream) {
  const void* srcs[2] = {dst, src};
  reduce(dst, srcs, 2, count, dtype, op, stream);
}

void divide(void* dst, size_t count, DataType dtype, int divisor, cudaStream_t stream) {
  SMDDP_CHECK(divisor >= 1 && static_cast<int>(dtype) < kNumDataTypes);
  if (count == 0) return;
  const size_t es = dtype_size(dtype);
  check_element_aligned(dst, es, "cuda::divide");
  const void* self[1] = {dst};
  const Layout l = layout_of(dst, self, 1, count, es);
  const size_t items = work_items(l, count, es);
  kTable.divide[static_cast<int>(dtype)](dst, count, l, divisor, grid_for(items), stream);
  check(cudaGetLastError(), "divide kernel launch");
}

}  // namespace smddp::cuda

namespace smddp::cuda {

void copy(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || dst == src) return;
  // A one-source byte "reduction" is a plain streaming copy through the SMs.
  Sources s{};
  s.p[0] = src;
  const void* srcs[1] = {src};
  const Layout l = layout_of(dst, srcs, 1, bytes, 1);
  kTable.reduce[static_cast<int>(DataType::Uint8)][static_cast<int>(ReduceOp::Sum)](
      dst, s, 1, bytes, l, grid_for(work_items(l, bytes, 1)), stream);
  check(cudaGetLastError(), "copy kernel launch");
}

}  // namespace smddp::cuda
