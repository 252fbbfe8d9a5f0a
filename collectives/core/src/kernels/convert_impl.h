// Block conversions between the 16- and 8-bit float types and float,
// compiled once per ISA (included by kernels_impl.h, see there for why). The
// element conversions themselves are reduce_ops.h's, shared with the device
// kernels; this file loops them over blocks, or uses the ISA's instructions
// where they give the same bits.
//
// Every path must produce the same bits, so:
//  - bfloat16 and fp8 use the same portable integer code everywhere (the
//    compiler vectorises it; fp8 widening is a 256-entry table).
//  - float16 uses F16C/AVX-512 conversion instructions where available, and
//    in the portable path reduce_ops.h's software conversion, which
//    reproduces them bit for bit, NaN payloads included.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "kernels/reduce_ops.h"

namespace smddp::kernels::SMDDP_KERNEL_NS {
namespace {

void bf16_widen(const uint16_t* __restrict in, float* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = ops::bf16_to_float(in[i]);
}

void bf16_narrow(const float* __restrict in, uint16_t* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = ops::float_to_bf16(in[i]);
}

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
  for (size_t i = 0; i < n; ++i) out[i] = ops::bits_float(kWiden.bits[in[i]]);
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

#else  // portable: the software conversion

void f16_widen(const uint16_t* __restrict in, float* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = ops::f16_to_float(in[i]);
}

void f16_narrow(const float* __restrict in, uint16_t* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = ops::float_to_f16(in[i]);
}

#endif

}  // namespace
}  // namespace smddp::kernels::SMDDP_KERNEL_NS
