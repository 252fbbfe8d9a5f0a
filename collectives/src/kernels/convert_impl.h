// Block conversions between the 16-bit float types and float, compiled once
// per ISA (included by kernels_impl.h, see there for why).
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
