// The element loops of every reduction, written once and compiled once per
// ISA: kernels_generic.cc, kernels_avx2.cc and kernels_avx512.cc each define
// SMDDP_KERNEL_NS / SMDDP_KERNEL_NAME and include this file, so the compiler
// vectorises the same source for each instruction set. Everything here lives
// in that per-ISA namespace (and an unnamed one inside it), and calls no
// std:: inline functions, so no AVX-512 copy of a function can be merged by
// the linker into the portable path.
//
// Vocabulary:
//  - block: a run of elements small enough to stay in L1 while every source
//    is folded into it (kBlockBytes of destination, or of float accumulator
//    for the 16-bit types);
//  - combine: one element-wise pass, dst = op(a, b) or dst = op(dst, b).
//
// Order of operations is fixed (src0 op src1 op src2 ..., per element, left
// to right) so every path gives the same bits. The element operators, Avg's
// division and the conversions are reduce_ops.h's, shared with the device
// kernels. float16/bfloat16 and the fp8 types are widened to float once per
// block, combined in float and rounded once at the end (fp8: saturating).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "kernels/convert_impl.h"
#include "kernels/kernels.h"
#include "kernels/reduce_ops.h"

namespace smddp::kernels::SMDDP_KERNEL_NS {
namespace {

constexpr size_t kBlockBytes = 8192;
constexpr size_t kHalfBlock = kBlockBytes / sizeof(float);

template <typename Op, typename T>
void combine(T* __restrict dst, const T* __restrict a, const T* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = Op::apply(a[i], b[i]);
}

template <typename Op, typename T>
void combine_into(T* __restrict dst, const T* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = Op::apply(dst[i], b[i]);
}

inline size_t block_len(size_t count, size_t offset, size_t block) {
  return count - offset < block ? count - offset : block;
}

// Types the CPU computes in directly: the integers, float32, float64.
template <typename T>
struct NativeFamily {
  template <typename Op>
  static void reduce(void* dst, const void* const* srcs, int nsrc, size_t count) {
    if (count == 0) return;
    T* d = static_cast<T*>(dst);
    const auto src = [srcs](int s) { return static_cast<const T*>(srcs[s]); };
    if (nsrc == 1) {
      if (dst != srcs[0]) __builtin_memcpy(dst, srcs[0], count * sizeof(T));
      return;
    }
    // In place (dst == srcs[0]) folds every other source into dst; otherwise
    // the first pass over a block writes op(src0, src1). Either way no
    // __restrict pointer aliases another.
    const bool in_place = dst == srcs[0];
    constexpr size_t kBlock = kBlockBytes / sizeof(T);
    for (size_t off = 0; off < count; off += kBlock) {
      const size_t n = block_len(count, off, kBlock);
      int s = 1;
      if (!in_place) {
        combine<Op>(d + off, src(0) + off, src(1) + off, n);
        s = 2;
      }
      for (; s < nsrc; ++s) combine_into<Op>(d + off, src(s) + off, n);
    }
  }

  static void divide(void* dst, size_t count, int divisor) {
    T* __restrict d = static_cast<T*>(dst);
    for (size_t i = 0; i < count; ++i) d[i] = ops::divided(d[i], divisor);
  }
};

struct F16Format {
  using Bits = uint16_t;
  static void widen(const uint16_t* in, float* out, size_t n) { f16_widen(in, out, n); }
  static void narrow(const float* in, uint16_t* out, size_t n) { f16_narrow(in, out, n); }
};

struct Bf16Format {
  using Bits = uint16_t;
  static void widen(const uint16_t* in, float* out, size_t n) { bf16_widen(in, out, n); }
  static void narrow(const float* in, uint16_t* out, size_t n) { bf16_narrow(in, out, n); }
};

template <typename Layout>
struct Fp8Format {
  using Bits = uint8_t;
  static void widen(const uint8_t* in, float* out, size_t n) { fp8_widen<Layout>(in, out, n); }
  static void narrow(const float* in, uint8_t* out, size_t n) { fp8_narrow<Layout>(in, out, n); }
};

// float16, bfloat16 and fp8: widen a block into a float accumulator, fold
// the other sources in float, round once when the block is written back.
template <typename Format>
struct HalfFamily {
  using Bits = typename Format::Bits;

  template <typename Op>
  static void reduce(void* dst, const void* const* srcs, int nsrc, size_t count) {
    if (count == 0) return;
    auto* d = static_cast<Bits*>(dst);
    const auto src = [srcs](int s) { return static_cast<const Bits*>(srcs[s]); };
    if (nsrc == 1) {
      if (dst != srcs[0]) __builtin_memcpy(dst, srcs[0], count * sizeof(Bits));
      return;
    }
    alignas(64) float acc[kHalfBlock];
    alignas(64) float next[kHalfBlock];
    for (size_t off = 0; off < count; off += kHalfBlock) {
      const size_t n = block_len(count, off, kHalfBlock);
      Format::widen(src(0) + off, acc, n);
      for (int s = 1; s < nsrc; ++s) {
        Format::widen(src(s) + off, next, n);
        combine_into<Op>(acc, next, n);
      }
      Format::narrow(acc, d + off, n);
    }
  }

  static void divide(void* dst, size_t count, int divisor) {
    auto* d = static_cast<Bits*>(dst);
    alignas(64) float acc[kHalfBlock];
    for (size_t off = 0; off < count; off += kHalfBlock) {
      const size_t n = block_len(count, off, kHalfBlock);
      Format::widen(d + off, acc, n);
      for (size_t i = 0; i < n; ++i) acc[i] = ops::divided(acc[i], divisor);
      Format::narrow(acc, d + off, n);
    }
  }
};

// row[op] = the reduction with op's operator, for every ReduceOp (Avg: the
// sum; the caller divides afterwards).
template <typename Family, size_t... kOps>
constexpr void fill_ops(ReduceFn (&row)[kNumReduceOps], std::index_sequence<kOps...>) {
  ((row[kOps] = &Family::template reduce<ops::OpFor<static_cast<ReduceOp>(kOps)>>), ...);
}

template <typename Family>
constexpr void fill_row(KernelTable& table, DataType dtype) {
  fill_ops<Family>(table.reduce[static_cast<int>(dtype)], std::make_index_sequence<kNumReduceOps>{});
  table.divide[static_cast<int>(dtype)] = &Family::divide;
}

constexpr KernelTable make_table() {
  KernelTable t{};
  t.isa = SMDDP_KERNEL_NAME;
  fill_row<NativeFamily<int8_t>>(t, DataType::Int8);
  fill_row<NativeFamily<uint8_t>>(t, DataType::Uint8);
  fill_row<NativeFamily<int32_t>>(t, DataType::Int32);
  fill_row<NativeFamily<uint32_t>>(t, DataType::Uint32);
  fill_row<NativeFamily<int64_t>>(t, DataType::Int64);
  fill_row<NativeFamily<uint64_t>>(t, DataType::Uint64);
  fill_row<HalfFamily<F16Format>>(t, DataType::Float16);
  fill_row<HalfFamily<Bf16Format>>(t, DataType::Bfloat16);
  fill_row<NativeFamily<float>>(t, DataType::Float32);
  fill_row<NativeFamily<double>>(t, DataType::Float64);
  fill_row<HalfFamily<Fp8Format<ops::E4M3Layout>>>(t, DataType::Float8E4M3);
  fill_row<HalfFamily<Fp8Format<ops::E5M2Layout>>>(t, DataType::Float8E5M2);
  t.f16_to_float = &f16_widen;
  t.float_to_f16 = &f16_narrow;
  t.bf16_to_float = &bf16_widen;
  t.float_to_bf16 = &bf16_narrow;
  t.e4m3_to_float = &fp8_widen<ops::E4M3Layout>;
  t.float_to_e4m3 = &fp8_narrow<ops::E4M3Layout>;
  t.e5m2_to_float = &fp8_widen<ops::E5M2Layout>;
  t.float_to_e5m2 = &fp8_narrow<ops::E5M2Layout>;
  return t;
}

}  // namespace

// Constant-initialised: usable from any static constructor, no code runs.
constexpr KernelTable kTable = make_table();

}  // namespace smddp::kernels::SMDDP_KERNEL_NS
