// The element arithmetic of every reduction, defined once for the host
// kernels (kernels_impl.h, compiled by g++ once per ISA) and the device
// kernels (cuda/kernels.cu, compiled by nvcc): the operators, which one each
// ReduceOp combines with, Avg's division, and the scalar conversions between
// float and the 16- and 8-bit float types. Both sides give the same bits
// because both call these.
//
// Rules that keep it usable from both compilers and from every ISA copy:
//  - every function is SMDDP_HOST_DEVICE (__host__ __device__ under nvcc,
//    nothing under g++) and inline;
//  - everything is in an unnamed namespace: each translation unit gets its
//    own copy, so the linker cannot merge an AVX-512 instance into the
//    portable path (see kernels_impl.h);
//  - no std:: functions (only type traits), no exceptions, no globals.
//
// The device converts float16 and fp8 with CUDA's own instructions where it
// has them (cuda/kernels.cu); the conversions here are the host's, written to
// give those instructions' bits, and the device uses their NaN rules.
#pragma once

#include <cstdint>
#include <type_traits>

#include "smddp/types.h"

#if defined(__CUDACC__)
#define SMDDP_HOST_DEVICE __host__ __device__
#else
#define SMDDP_HOST_DEVICE
#endif

namespace smddp::kernels::ops {
namespace {

// ---- Bits ------------------------------------------------------------------

SMDDP_HOST_DEVICE inline uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return __builtin_bit_cast(uint32_t, f);
#endif
}

SMDDP_HOST_DEVICE inline float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return __builtin_bit_cast(float, u);
#endif
}

// ---- Operators ---------------------------------------------------------------
// Each is `static T apply(T a, T b)`; a reduction folds src0 op src1 op src2
// ... left to right, per element, so every path gives the same bits.

// Unsigned arithmetic type for T: no integer promotion to a signed int, so
// overflow wraps instead of being undefined.
template <typename T>
using WrapType =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

struct SumOp {
  template <typename T>
  SMDDP_HOST_DEVICE static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
    } else {
      return a + b;
    }
  }
};

struct ProdOp {
  template <typename T>
  SMDDP_HOST_DEVICE static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
    } else {
      return a * b;
    }
  }
};

// For floats, `a != a` makes a NaN in either operand win; the select form
// (rather than a call to fmin) keeps the host loop vectorisable. On ties
// (-0, +0) the second operand is returned.
struct MinOp {
  template <typename T>
  SMDDP_HOST_DEVICE static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return a < b ? a : b;
    } else {
      return (a < b || a != a) ? a : b;
    }
  }
};

struct MaxOp {
  template <typename T>
  SMDDP_HOST_DEVICE static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return a > b ? a : b;
    } else {
      return (a > b || a != a) ? a : b;
    }
  }
};

// The operator each ReduceOp combines with. Avg combines like Sum; the
// caller then applies divided() once, with the number of contributions.
// No primary definition: a new ReduceOp fails to compile until it has one.
template <ReduceOp kOp>
struct OpOf;
template <>
struct OpOf<ReduceOp::Sum> {
  using type = SumOp;
};
template <>
struct OpOf<ReduceOp::Prod> {
  using type = ProdOp;
};
template <>
struct OpOf<ReduceOp::Min> {
  using type = MinOp;
};
template <>
struct OpOf<ReduceOp::Max> {
  using type = MaxOp;
};
template <>
struct OpOf<ReduceOp::Avg> {
  using type = SumOp;
};
template <ReduceOp kOp>
using OpFor = typename OpOf<kOp>::type;

// Avg's last step, x / divisor (divisor >= 1), in the type the elements are
// combined in. Integers divide in a 64-bit type of their signedness:
// truncation toward zero, and no overflow. Floats divide correctly rounded.
template <typename T>
SMDDP_HOST_DEVICE T divided(T x, int divisor) {
  if constexpr (std::is_integral_v<T>) {
    using Wide = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    return static_cast<T>(static_cast<Wide>(x) / static_cast<Wide>(divisor));
  } else {
    return x / static_cast<T>(divisor);
  }
}

// ---- bfloat16 ----------------------------------------------------------------
// Widening is exact. Narrowing rounds to nearest even; a NaN keeps its sign
// and top payload bits and becomes quiet. The same integer code everywhere:
// VCVTNEPS2BF16 (AVX512-BF16) would flush subnormal inputs to zero.

SMDDP_HOST_DEVICE inline float bf16_to_float(uint16_t h) { return bits_float(uint32_t{h} << 16); }

SMDDP_HOST_DEVICE inline uint16_t float_to_bf16(float f) {
  const uint32_t x = float_bits(f);
  const bool nan = (x & 0x7fffffffu) > 0x7f800000u;
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>(nan ? (x >> 16) | 0x40u : rounded);
}

// ---- float16 -----------------------------------------------------------------
// The bits of the F16C / AVX-512 conversion instructions (VCVTPH2PS,
// VCVTPS2PH with round to nearest even): subnormals kept, overflow to
// infinity, and a NaN keeps its sign and top payload bits and becomes quiet.
// The host's portable path converts with these; the ISA paths and the device
// use their instructions, and the device takes its NaNs from here.

SMDDP_HOST_DEVICE inline bool f16_is_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

// Float bits of a float16 NaN.
SMDDP_HOST_DEVICE inline uint32_t f16_nan_to_float_bits(uint16_t h) {
  return (uint32_t{h & 0x8000u} << 16) | 0x7fc00000u | (uint32_t{h & 0x3ffu} << 13);
}

SMDDP_HOST_DEVICE inline bool float_bits_is_nan(uint32_t x) { return (x & 0x7fffffffu) > 0x7f800000u; }

// Float16 bits of the float NaN with bits x.
SMDDP_HOST_DEVICE inline uint16_t float_nan_bits_to_f16(uint32_t x) {
  return static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7e00u | ((x >> 13) & 0x3ffu));
}

SMDDP_HOST_DEVICE inline float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(mant != 0 ? f16_nan_to_float_bits(h) : sign | 0x7f800000u);
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    return bits_float(sign | float_bits(static_cast<float>(mant) * 0x1p-24f));
  }
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

SMDDP_HOST_DEVICE inline uint16_t float_to_f16(float f) {
  const uint32_t x = float_bits(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t mag = x & 0x7fffffffu;
  if (float_bits_is_nan(x)) return float_nan_bits_to_f16(x);
  if (mag >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  if (mag >= 0x38800000u) {  // normal half: rebias, round the 13 dropped bits to even
    const uint32_t y = mag - 0x38000000u;
    return static_cast<uint16_t>(sign | ((y + 0xfffu + ((y >> 13) & 1u)) >> 13));
  }
  // Subnormal half: round mag * 2^24 = m * 2^(e-126) to an integer, ties to even.
  const uint32_t e = mag >> 23;
  const uint32_t shift = 126 - e;  // >= 14 here
  if (shift > 24) return sign;     // below half the smallest subnormal, or a float subnormal
  const uint32_t m = (mag & 0x7fffffu) | 0x800000u;
  uint32_t r = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (r & 1u) != 0)) ++r;
  return static_cast<uint16_t>(sign | r);
}

// ---- fp8 (f8e4m3, f8e5m2) ----------------------------------------------------
// Widening is exact. Narrowing gives the bits of CUDA's
// __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...), the conversion NCCL's fp8
// reductions use (and the device kernels call): round to nearest even,
// subnormals kept, a magnitude above the largest finite value (infinity
// included) becomes that value with its sign (448, 57344), and every NaN
// becomes 0x7f.
//
// Layouts: kMan mantissa bits, exponent bias kBias, the largest finite
// magnitude's code kMaxCode; E5M2 has infinities (0x7c), E4M3 none (its
// 0x7f is NaN, 0x7e is 448).
template <int kMan, int kBias, uint8_t kMaxCode, bool kHasInf>
struct Fp8Layout {
  // Exact float bits of code c.
  SMDDP_HOST_DEVICE static constexpr uint32_t widen_bits(uint8_t c) {
    const uint32_t sign = uint32_t{c & 0x80u} << 24;
    const uint32_t mag = c & 0x7fu;
    const uint32_t exp = mag >> kMan;
    const uint32_t man = mag & ((1u << kMan) - 1);
    constexpr uint32_t kTopExp = 0x7fu >> kMan;
    if (kHasInf && exp == kTopExp) return sign | 0x7f800000u | (man != 0 ? 0x00400000u | (man << (23 - kMan)) : 0u);
    if (!kHasInf && mag == 0x7fu) return sign | 0x7fc00000u | (man << (23 - kMan));
    if (exp == 0) {  // zero or subnormal: man * 2^(1 - bias - kMan), normalised for float
      if (man == 0) return sign;
      int e = 1 - kBias - kMan;
      uint32_t m = man;
      while ((m & (1u << kMan)) == 0) {
        m <<= 1;
        --e;
      }
      return sign | (static_cast<uint32_t>(e + kMan + 127) << 23) | ((m & ((1u << kMan) - 1)) << (23 - kMan));
    }
    return sign | ((exp + 127 - kBias) << 23) | (man << (23 - kMan));
  }

  static constexpr uint32_t kMaxBits = widen_bits(kMaxCode);                           // 448 or 57344
  static constexpr uint32_t kMinNormalBits = static_cast<uint32_t>(128 - kBias) << 23;  // 2^(1-bias)

  SMDDP_HOST_DEVICE static uint8_t narrow(float f) {
    const uint32_t x = float_bits(f);
    uint32_t mag = x & 0x7fffffffu;
    if (mag > 0x7f800000u) return 0x7f;
    const auto sign = static_cast<uint8_t>((x >> 24) & 0x80u);
    // Saturation: everything above the largest finite value rounds to it
    // (the midpoint above it too), so clamping first gives the same bits.
    if (mag > kMaxBits) mag = kMaxBits;
    if (mag >= kMinNormalBits) {  // normal: rebias, round the dropped bits to even
      constexpr int kDrop = 23 - kMan;
      const uint32_t y = mag - (static_cast<uint32_t>(127 - kBias) << 23);
      return static_cast<uint8_t>(sign | ((y + (1u << (kDrop - 1)) - 1 + ((y >> kDrop) & 1u)) >> kDrop));
    }
    // Subnormal: round mag's value / 2^(1 - bias - kMan) to an integer, ties
    // to even. The value is m * 2^(e - 150) with m the 24-bit significand.
    const uint32_t e = mag >> 23;
    const uint32_t shift = static_cast<uint32_t>(150 + 1 - kBias - kMan) - e;
    if (e == 0 || shift > 24) return sign;  // below half the smallest subnormal
    const uint32_t m = (mag & 0x7fffffu) | 0x800000u;
    uint32_t r = m >> shift;
    const uint32_t rest = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (r & 1u) != 0)) ++r;
    return static_cast<uint8_t>(sign | r);  // r == 1 << kMan is the smallest normal: right too
  }
};

using E4M3Layout = Fp8Layout<3, 7, 0x7e, false>;
using E5M2Layout = Fp8Layout<2, 15, 0x7b, true>;

}  // namespace
}  // namespace smddp::kernels::ops
