#include "reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace smddp::test {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t raw(uint64_t seed, int rank, size_t index) {
  return mix(seed ^ mix(static_cast<uint64_t>(rank) * 0x100000001b3ULL + index));
}

uint16_t float_to_half_exact(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  uint32_t sign = (b >> 16) & 0x8000;
  if ((b & 0x7fffffff) == 0) return static_cast<uint16_t>(sign);
  int exp = static_cast<int>((b >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>(sign | (exp << 10) | ((b >> 13) & 0x3ff));
}

float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(man), -24);
  } else if (exp == 31) {
    v = man ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
  }
  uint32_t b;
  std::memcpy(&b, &v, 4);
  b |= sign;
  std::memcpy(&v, &b, 4);
  return v;
}

float bf16_to_float(uint16_t h) {
  uint32_t b = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// Significand bits, the implicit one included.
int significand_bits(DataType t) {
  switch (t) {
    case DataType::Float16: return 11;
    case DataType::Bfloat16: return 8;
    case DataType::Float32: return 24;
    case DataType::Float8E4M3: return 4;
    case DataType::Float8E5M2: return 3;
    default: return 53;
  }
}

bool is_fp8(DataType t) { return t == DataType::Float8E4M3 || t == DataType::Float8E5M2; }
int fp8_bias(DataType t) { return t == DataType::Float8E4M3 ? 7 : 15; }

// Code of an fp8 value `v` the type holds exactly (normal or subnormal).
uint8_t fp8_code(double v, DataType t) {
  const int man = significand_bits(t) - 1, bias = fp8_bias(t);
  const auto sign = static_cast<uint8_t>(std::signbit(v) ? 0x80 : 0);
  const double mag = std::fabs(v);
  if (mag == 0) return sign;
  int e = 0;
  const double fraction = std::frexp(mag, &e);  // mag = fraction * 2^e, fraction in [0.5, 1)
  const int biased = e - 1 + bias;
  if (biased < 1) return static_cast<uint8_t>(sign | static_cast<int>(std::ldexp(mag, bias + man - 1)));
  const int mantissa = static_cast<int>(std::ldexp(fraction, man + 1)) - (1 << man);
  return static_cast<uint8_t>(sign | (biased << man) | mantissa);
}

double fp8_value(uint8_t c, DataType t) {
  const int man = significand_bits(t) - 1, bias = fp8_bias(t);
  const int exp = (c & 0x7f) >> man, mantissa = c & ((1 << man) - 1);
  const bool e4m3 = t == DataType::Float8E4M3;
  double mag = 0;
  if (e4m3 ? (c & 0x7f) == 0x7f : exp == 31) {
    mag = (!e4m3 && mantissa == 0) ? INFINITY : NAN;
  } else if (exp == 0) {
    mag = std::ldexp(mantissa, 1 - bias - man);
  } else {
    mag = std::ldexp((1 << man) + mantissa, exp - bias - man);
  }
  return (c & 0x80) != 0 ? -mag : mag;
}

uint64_t dtype_mask(DataType t) {
  size_t bits = dtype_size(t) * 8;
  return bits == 64 ? ~0ULL : (1ULL << bits) - 1;
}

bool is_signed(DataType t) {
  return t == DataType::Int8 || t == DataType::Int32 || t == DataType::Int64;
}

// Sign-extends the dtype's bits to int64.
int64_t as_signed(uint64_t bits, DataType t) {
  size_t width = dtype_size(t) * 8;
  if (width == 64) return static_cast<int64_t>(bits);
  uint64_t sign = 1ULL << (width - 1);
  return static_cast<int64_t>((bits ^ sign) - sign);
}

// The constants of the header's bounds for one (dtype, ranks): the same for
// every element, so worked out once (pow and ldexp per element cost the
// tests a tenth of their time).
struct Bounds {
  double u = 0, gamma = 0, limit = 0;
};
const Bounds& bounds(DataType dtype, int nranks) {
  thread_local DataType last_dtype = DataType::Uint8;
  thread_local int last_ranks = -1;
  thread_local Bounds b;
  if (dtype != last_dtype || nranks != last_ranks) {
    const int p = significand_bits(dtype);
    // fp8: the engine may add in float before it rounds to fp8, so one
    // operation's relative error is up to 2^-p + 2^-23 (the header).
    b.u = std::ldexp(1.0, -p) + (is_fp8(dtype) ? std::ldexp(1.0, -23) : 0.0);
    b.gamma = std::pow(1 + b.u, nranks - 1) - 1;
    b.limit = std::ldexp(1.0, p);
    last_dtype = dtype;
    last_ranks = nranks;
  }
  return b;
}

}  // namespace

double input_value(uint64_t seed, int rank, size_t index, DataType dtype, ReduceOp op) {
  uint64_t r = raw(seed, rank, index);
  if (!dtype_is_float(dtype)) return 0;
  double v = (static_cast<double>(r % 257) - 128.0) / 128.0;  // [-1, 1], never all zeros
  if (op == ReduceOp::Prod) v = (128.0 + static_cast<double>(r % 33) - 16.0) / 128.0;  // [0.875, 1.125]
  // fp8 holds fewer of them: the nearest fp8 value, still a multiple of 1/128.
  return is_fp8(dtype) ? round_to(dtype, v) : v;
}

void fill_input(void* out, uint64_t seed, int rank, size_t first, size_t count, DataType dtype,
                ReduceOp op) {
  char* p = static_cast<char*>(out);
  const size_t es = dtype_size(dtype);
  for (size_t i = 0; i < count; ++i) {
    const size_t index = first + i;
    char* dst = p + i * es;
    switch (dtype) {
      case DataType::Float16: {
        uint16_t h = float_to_half_exact(static_cast<float>(input_value(seed, rank, index, dtype, op)));
        std::memcpy(dst, &h, 2);
        break;
      }
      case DataType::Bfloat16: {
        float f = static_cast<float>(input_value(seed, rank, index, dtype, op));
        uint32_t b;
        std::memcpy(&b, &f, 4);
        uint16_t h = static_cast<uint16_t>(b >> 16);
        std::memcpy(dst, &h, 2);
        break;
      }
      case DataType::Float32: {
        float f = static_cast<float>(input_value(seed, rank, index, dtype, op));
        std::memcpy(dst, &f, 4);
        break;
      }
      case DataType::Float64: {
        double d = input_value(seed, rank, index, dtype, op);
        std::memcpy(dst, &d, 8);
        break;
      }
      case DataType::Float8E4M3:
      case DataType::Float8E5M2: {
        const uint8_t c = fp8_code(input_value(seed, rank, index, dtype, op), dtype);
        std::memcpy(dst, &c, 1);
        break;
      }
      default: {
        uint64_t bits = raw(seed, rank, index);
        std::memcpy(dst, &bits, es);  // little-endian: the low bytes
      }
    }
  }
}

double read_float(const void* buf, size_t i, DataType dtype) {
  const char* p = static_cast<const char*>(buf) + i * dtype_size(dtype);
  uint16_t h;
  switch (dtype) {
    case DataType::Float16:
      std::memcpy(&h, p, 2);
      return half_to_float(h);
    case DataType::Bfloat16:
      std::memcpy(&h, p, 2);
      return bf16_to_float(h);
    case DataType::Float32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DataType::Float8E4M3:
    case DataType::Float8E5M2: return fp8_value(static_cast<uint8_t>(*p), dtype);
    default: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
  }
}

uint64_t read_bits(const void* buf, size_t i, DataType dtype) {
  uint64_t bits = 0;
  std::memcpy(&bits, static_cast<const char*>(buf) + i * dtype_size(dtype), dtype_size(dtype));
  return bits;
}

Expected reduce_reference(uint64_t seed, int nranks, size_t index, DataType dtype, ReduceOp op) {
  Expected e;
  if (dtype_is_float(dtype)) {
    double magnitude = 0, numerators = 1;  // sum of |x|; product of the k = 128x
    for (int r = 0; r < nranks; ++r) {
      double x = input_value(seed, r, index, dtype, op);
      magnitude += std::fabs(x);
      numerators *= std::fabs(x) * 128;
      if (r == 0) {
        e.value = x;
        continue;
      }
      switch (op) {
        case ReduceOp::Sum:
        case ReduceOp::Avg: e.value += x; break;
        case ReduceOp::Prod: e.value *= x; break;
        case ReduceOp::Min: e.value = std::min(e.value, x); break;
        case ReduceOp::Max: e.value = std::max(e.value, x); break;
      }
    }
    const Bounds& b = bounds(dtype, nranks);
    const double u = b.u, gamma = b.gamma, limit = b.limit;
    switch (op) {
      case ReduceOp::Sum:
        e.exact = magnitude * 128 < limit;
        e.tolerance = gamma * magnitude;
        break;
      case ReduceOp::Avg:
        e.exact = magnitude * 128 < limit;
        e.value /= nranks;
        e.tolerance = gamma * magnitude / nranks + 2 * u * std::fabs(e.value);
        break;
      case ReduceOp::Prod:
        e.exact = numerators < limit;
        e.tolerance = gamma * std::fabs(e.value);
        break;
      case ReduceOp::Min:
      case ReduceOp::Max: break;  // picks an input: always exact
    }
    return e;
  }
  const uint64_t mask = dtype_mask(dtype);
  const bool sign = is_signed(dtype);
  uint64_t acc = raw(seed, 0, index) & mask;
  for (int r = 1; r < nranks; ++r) {
    uint64_t x = raw(seed, r, index) & mask;
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Avg: acc = (acc + x) & mask; break;
      case ReduceOp::Prod: acc = (acc * x) & mask; break;
      case ReduceOp::Min:
        acc = sign ? (as_signed(x, dtype) < as_signed(acc, dtype) ? x : acc) : std::min(acc, x);
        break;
      case ReduceOp::Max:
        acc = sign ? (as_signed(x, dtype) > as_signed(acc, dtype) ? x : acc) : std::max(acc, x);
        break;
    }
  }
  if (op == ReduceOp::Avg) {
    acc = sign ? static_cast<uint64_t>(as_signed(acc, dtype) / nranks) & mask : acc / nranks;
  }
  e.bits = acc;
  return e;
}

double round_to(DataType dtype, double v) {
  switch (dtype) {
    case DataType::Float64: return v;
    case DataType::Float32: return static_cast<float>(v);
    case DataType::Float16:
    case DataType::Bfloat16:
    case DataType::Float8E4M3:
    case DataType::Float8E5M2: {
      // Through float, as the kernels narrow: ties to even at the 16- or
      // 8-bit format's last bit. Exact reductions are short dyadic fractions
      // or sums over n, so the float step never lands on a midpoint. (No
      // saturation: the values here are far below fp8's largest, 448.)
      const float f = static_cast<float>(v);
      if (f == 0) return f;
      int exponent;
      std::frexp(f, &exponent);
      const int p = significand_bits(dtype);
      // frexp's exponent of the smallest normal; below it: subnormal steps.
      const int min_exponent = dtype == DataType::Float16      ? -13
                               : dtype == DataType::Float8E4M3 ? -5
                               : dtype == DataType::Float8E5M2 ? -13
                                                               : -125;
      const double step = std::ldexp(1.0, std::max(exponent, min_exponent) - p);
      return std::nearbyint(static_cast<double>(f) / step) * step;  // default mode: ties to even
    }
    default: return v;
  }
}

bool matches_reduction(const void* buf, size_t i, DataType dtype, const Expected& e) {
  if (!dtype_is_float(dtype)) return read_bits(buf, i, dtype) == e.bits;
  const double got = read_float(buf, i, dtype);
  if (e.exact) return got == round_to(dtype, e.value);
  return std::fabs(got - e.value) <= e.tolerance;
}

bool matches_input(const void* buf, size_t i, DataType dtype, uint64_t seed, int rank,
                   size_t index, ReduceOp op) {
  if (!dtype_is_float(dtype)) {
    return read_bits(buf, i, dtype) == (raw(seed, rank, index) & dtype_mask(dtype));
  }
  return read_float(buf, i, dtype) == input_value(seed, rank, index, dtype, op);
}

}  // namespace smddp::test
