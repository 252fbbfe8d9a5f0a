// Block conversions between the 16- and 8-bit float types and float,
// compiled once per ISA (included by kernels_impl.h, see there for why).
//
// Every path must produce the same bits, so:
//  - bfloat16 uses the same portable integer code everywhere (the compiler
//    vectorises it). VCVTNEPS2BF16 (AVX512-BF16) would be faster but it
//    flushes subnormal inputs to zero, which the other paths do not.
//  - float16 uses F16C/AVX-512 conversion instructions where available, and
//    in the portable path a software conversion that reproduces them bit for
//    bit, NaN payloads included: round to nearest even, subnormals kept,
//    overflow to infinity, a NaN keeps its sign and top payload bits and
//    becomes quiet.
//  - fp8 (f8e4m3, f8e5m2) uses the same portable integer code everywhere.
//    Widening is exact (a 256-entry table). Narrowing gives the bits of
//    CUDA's __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...), the conversion
//    NCCL's fp8 reductions use: round to nearest even, subnormals kept, a
//    magnitude above the largest finite value (infinity included) becomes
//    that value with its sign (448, 57344), and every NaN becomes 0x7f.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace smddp::kernels::SMDDP_KERNEL_NS {
namespace {

inline uint32_t float_bits(float f) { return __builtin_bit_cast(uint32_t, f); }
inline float bits_float(uint32_t u) { return __builtin_bit_cast(float, u); }

void bf16_widen(const uint16_t* __restrict in, float* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = bits_float(uint32_t{in[i]} << 16);
}

void bf16_narrow(const float* __restrict in, uint16_t* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t x = float_bits(in[i]);
    const bool nan = (x & 0x7fffffffu) > 0x7f800000u;
    const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    out[i] = static_cast<uint16_t>(nan ? (x >> 16) | 0x40u : rounded);
  }
}

// fp8 layouts: kMan mantissa bits, exponent bias kBias, the largest finite
// magnitude's code kMaxCode; E5M2 has infinities (0x7c), E4M3 none (its
// 0x7f is NaN, 0x7e is 448).
template <int kMan, int kBias, uint8_t kMaxCode, bool kHasInf>
struct Fp8Layout {
  // Exact float bits of code c.
  static constexpr uint32_t widen_bits(uint8_t c) {
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

  static uint8_t narrow(float f) {
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

template <typename Layout>
struct Fp8WidenTable {
  uint32_t bits[256];
  constexpr Fp8WidenTable() : bits{} {
    for (int c = 0; c < 256; ++c) bits[c] = Layout::widen_bits(static_cast<uint8_t>(c));
  }
};

template <typename Layout>
void fp8_widen(const uint8_t* __restrict in, float* __restrict out, size_t n) {
  static constexpr Fp8WidenTable<Layout> kWiden{};
  for (size_t i = 0; i < n; ++i) out[i] = bits_float(kWiden.bits[in[i]]);
}

template <typename Layout>
void fp8_narrow(const float* __restrict in, uint8_t* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = Layout::narrow(in[i]);
}

#if defined(__AVX512F__)

// The zero-masking forms (_mm512_maskz_*) with a full mask are the plain
// conversions; GCC 12 warns about _mm512_undefined_* inside the plain ones.
constexpr __mmask16 kAllLanes = 0xffff;

void f16_widen(const uint16_t* __restrict in, float* __restrict out, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    _mm512_storeu_ps(out + i, _mm512_maskz_cvtph_ps(kAllLanes, h));
  }
  if (i < n) {
    const auto mask = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m256i h = _mm256_maskz_loadu_epi16(mask, in + i);
    _mm512_mask_storeu_ps(out + i, mask, _mm512_maskz_cvtph_ps(mask, h));
  }
}

void f16_narrow(const float* __restrict in, uint16_t* __restrict out, size_t n) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm512_maskz_cvtps_ph(kAllLanes, _mm512_loadu_ps(in + i), kRound);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), h);
  }
  if (i < n) {
    const auto mask = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m256i h = _mm512_maskz_cvtps_ph(mask, _mm512_maskz_loadu_ps(mask, in + i), kRound);
    _mm256_mask_storeu_epi16(out + i, mask, h);
  }
}

#elif defined(__F16C__)

// Eight lanes at a time; the tail goes through a zero-padded copy so that no
// lane reads or writes past the caller's buffers.
void f16_widen(const uint16_t* __restrict in, float* __restrict out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  if (i < n) {
    uint16_t h[8] = {};
    float f[8];
    __builtin_memcpy(h, in + i, (n - i) * sizeof(uint16_t));
    _mm256_storeu_ps(f, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h))));
    __builtin_memcpy(out + i, f, (n - i) * sizeof(float));
  }
}

void f16_narrow(const float* __restrict in, uint16_t* __restrict out, size_t n) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), kRound);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  if (i < n) {
    float f[8] = {};
    uint16_t h[8];
    __builtin_memcpy(f, in + i, (n - i) * sizeof(float));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h), _mm256_cvtps_ph(_mm256_loadu_ps(f), kRound));
    __builtin_memcpy(out + i, h, (n - i) * sizeof(uint16_t));
  }
}

#else  // portable software conversion

float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) {  // inf, or NaN made quiet
    return bits_float(sign | 0x7f800000u | (mant << 13) | (mant != 0 ? 0x00400000u : 0u));
  }
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    return bits_float(sign | float_bits(static_cast<float>(mant) * 0x1p-24f));
  }
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t float_to_f16(float f) {
  const uint32_t x = float_bits(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((mag >> 13) & 0x3ffu));
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

void f16_widen(const uint16_t* __restrict in, float* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = f16_to_float(in[i]);
}

void f16_narrow(const float* __restrict in, uint16_t* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = float_to_f16(in[i]);
}

#endif

}  // namespace
}  // namespace smddp::kernels::SMDDP_KERNEL_NS
