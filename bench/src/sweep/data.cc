#include "sweep/data.h"

#include <array>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "cli/alltoallv_matrix.h"
#include "sweep/bitwise.h"
#include "smddp/traits.h"

namespace smddp::bench {
namespace {

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

bool is_unsigned(DataType t) {
  return t == DataType::Uint8 || t == DataType::Uint32 || t == DataType::Uint64;
}

bool is_fp8(DataType t) { return t == DataType::Float8E4M3 || t == DataType::Float8E5M2; }

// fp8 sums stay exact in any order while every partial sum is an integer
// the type holds: all of them up to 16 (f8e4m3) or 8 (f8e5m2). So fp8
// sum/avg inputs are -1, 0 or 1 from that many ranks, 0 from the others.
int fp8_summing_ranks(DataType t) { return t == DataType::Float8E4M3 ? 16 : 8; }

// Input `index` of `rank`, small enough for every dtype and rank count.
double input(const DataSpec& s, int rank, size_t index) {
  uint64_t h = mix(s.seed ^ mix((static_cast<uint64_t>(rank) << 40) + index));
  if (is_fp8(s.dtype) && (s.op == ReduceOp::Sum || s.op == ReduceOp::Avg)) {
    return rank < fp8_summing_ranks(s.dtype) ? static_cast<double>(h % 3) - 1 : 0;
  }
  switch (s.op) {
    case ReduceOp::Prod:
      // Exactly one rank contributes 2, the others +-1 (1 for unsigned).
      if (index % static_cast<size_t>(s.nranks) == static_cast<size_t>(rank)) return 2;
      return (is_unsigned(s.dtype) || (h & 1)) ? 1 : -1;
    case ReduceOp::Min:
    case ReduceOp::Max:
      return is_unsigned(s.dtype) ? static_cast<double>(h % 17) : static_cast<double>(h % 17) - 8;
    default:
      return is_unsigned(s.dtype) ? static_cast<double>(h % 3) : static_cast<double>(h % 5) - 2;
  }
}

// `v` (a normal fp8 value or 0 once rounded: the values here are 0 or at
// least 1/nranks) rounded through float to `man` mantissa bits, ties to even,
// as fp8 bits with exponent bias `bias`.
uint8_t to_fp8(double v, int man, int bias) {
  const float f = static_cast<float>(v);
  if (f == 0) return std::signbit(f) ? 0x80 : 0;
  int exponent = 0;
  const double fraction = std::frexp(std::fabs(static_cast<double>(f)), &exponent);  // [0.5, 1)
  double scaled = std::nearbyint(std::ldexp(fraction, man + 1));                      // [2^man, 2^(man+1)], ties to even
  if (scaled == std::ldexp(1.0, man + 1)) {
    scaled /= 2;
    ++exponent;
  }
  const auto mantissa = static_cast<unsigned>(scaled) - (1u << man);
  const auto code = static_cast<unsigned>((exponent - 1 + bias) << man) | mantissa;
  return static_cast<uint8_t>((f < 0 ? 0x80u : 0u) | code);
}

// Stores `v` as the dtype holds it: integers truncated toward zero (as the
// avg of integers is), floats rounded to nearest, ties to even. Inputs are
// small integers and 2^k, exact everywhere; only an avg's quotient rounds.
// Written here, not taken from the engine, so the check is independent.
void store(void* p, size_t i, DataType t, double v) {
  char* dst = static_cast<char*>(p) + i * dtype_size(t);
  switch (t) {
    case DataType::Int8: { int8_t x = static_cast<int8_t>(v); std::memcpy(dst, &x, 1); break; }
    case DataType::Uint8: { uint8_t x = static_cast<uint8_t>(v); std::memcpy(dst, &x, 1); break; }
    case DataType::Int32: { int32_t x = static_cast<int32_t>(v); std::memcpy(dst, &x, 4); break; }
    case DataType::Uint32: { uint32_t x = static_cast<uint32_t>(v); std::memcpy(dst, &x, 4); break; }
    case DataType::Int64: { int64_t x = static_cast<int64_t>(v); std::memcpy(dst, &x, 8); break; }
    case DataType::Uint64: { uint64_t x = static_cast<uint64_t>(v); std::memcpy(dst, &x, 8); break; }
    case DataType::Float32: { float x = static_cast<float>(v); std::memcpy(dst, &x, 4); break; }
    case DataType::Float64: std::memcpy(dst, &v, 8); break;
    case DataType::Bfloat16: {
      float f = static_cast<float>(v);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      uint16_t h = static_cast<uint16_t>((b + 0x7fff + ((b >> 16) & 1)) >> 16);  // the top 16 bits, rounded
      std::memcpy(dst, &h, 2);
      break;
    }
    case DataType::Float16: {
      // Normal halves only: the values here are 0 or at least 1/nranks.
      float f = static_cast<float>(v);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      uint16_t h = static_cast<uint16_t>((b >> 16) & 0x8000);
      if ((b & 0x7fffffff) != 0) {
        int e = static_cast<int>((b >> 23) & 0xff) - 127 + 15;
        h = static_cast<uint16_t>(h | (e << 10) | ((b >> 13) & 0x3ff));
        const uint32_t rest = b & 0x1fff;  // the 13 bits dropped
        if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // a carry moves into the exponent, as it should
      }
      std::memcpy(dst, &h, 2);
      break;
    }
    case DataType::Float8E4M3: *reinterpret_cast<uint8_t*>(dst) = to_fp8(v, 3, 7); break;
    case DataType::Float8E5M2: *reinterpret_cast<uint8_t*>(dst) = to_fp8(v, 2, 15); break;
  }
}

// The exact reduction of element `index` over all ranks; an avg's exact
// quotient, which store() rounds as the dtype does.
double combined(const DataSpec& s, size_t index) {
  double acc = input(s, 0, index);
  for (int r = 1; r < s.nranks; ++r) {
    double x = input(s, r, index);
    switch (s.op) {
      case ReduceOp::Prod: acc *= x; break;
      case ReduceOp::Min: acc = std::min(acc, x); break;
      case ReduceOp::Max: acc = std::max(acc, x); break;
      default: acc += x;
    }
  }
  return s.op == ReduceOp::Avg ? acc / s.nranks : acc;
}

// Where find_wrong records wrong elements: indices count from `recv`.
struct Sink {
  const char* recv;
  std::vector<ElementMismatch>* out;
  size_t max;
};

// Compares `count` outputs at `out` with value(first + i).
template <typename Value>
size_t compare(const DataSpec& s, const void* out, size_t first, size_t count, Value value, Sink* sink) {
  const size_t es = dtype_size(s.dtype);
  constexpr size_t kBlock = 4096;
  std::vector<char> expected(kBlock * es);
  size_t wrong = 0;
  for (size_t base = 0; base < count; base += kBlock) {
    size_t n = std::min(kBlock, count - base);
    for (size_t i = 0; i < n; ++i) store(expected.data(), i, s.dtype, value(first + base + i));
    const char* got = static_cast<const char*>(out) + base * es;
    if (std::memcmp(got, expected.data(), n * es) == 0) continue;
    for (size_t i = 0; i < n; ++i) {
      if (std::memcmp(got + i * es, expected.data() + i * es, es) == 0) continue;
      ++wrong;
      if (sink && sink->out->size() < sink->max) {
        sink->out->push_back({static_cast<uint64_t>((got - sink->recv) / static_cast<std::ptrdiff_t>(es)) + i,
                              element_bits(expected.data(), i, es), element_bits(got, i, es)});
      }
    }
  }
  return wrong;
}

}  // namespace

void fill_send(const DataSpec& s, int rank, void* buf, size_t count) {
  for (size_t i = 0; i < count; ++i) store(buf, i, s.dtype, input(s, rank, i));
}

namespace {

const char* at(const void* p, size_t elements, DataType t) {
  return static_cast<const char*>(p) + elements * dtype_size(t);
}

size_t reduced(const DataSpec& s, int, const void* recv, size_t count, Sink* k) {
  return compare(s, recv, 0, count, [&](size_t i) { return combined(s, i); }, k);
}

size_t reduced_at_root(const DataSpec& s, int rank, const void* recv, size_t count, Sink* k) {
  return rank == s.root ? reduced(s, rank, recv, count, k) : 0;
}

// Output element i is input element rank*count + i.
size_t reduced_block(const DataSpec& s, int rank, const void* recv, size_t count, Sink* k) {
  return compare(s, recv, rank * count, count, [&](size_t i) { return combined(s, i); }, k);
}

// Block r is rank r's input.
size_t gathered(const DataSpec& s, int, const void* recv, size_t count, Sink* k) {
  size_t wrong = 0;
  for (int r = 0; r < s.nranks; ++r) {
    wrong += compare(s, at(recv, r * count, s.dtype), 0, count, [&](size_t i) { return input(s, r, i); }, k);
  }
  return wrong;
}

size_t gathered_at_root(const DataSpec& s, int rank, const void* recv, size_t count, Sink* k) {
  return rank == s.root ? gathered(s, rank, recv, count, k) : 0;
}

size_t broadcast(const DataSpec& s, int, const void* recv, size_t count, Sink* k) {
  return compare(s, recv, 0, count, [&](size_t i) { return input(s, s.root, i); }, k);
}

// The root's block `rank`.
size_t scattered(const DataSpec& s, int rank, const void* recv, size_t count, Sink* k) {
  return compare(s, recv, rank * count, count, [&](size_t i) { return input(s, s.root, i); }, k);
}

// Block r is block `rank` of rank r's input.
size_t exchanged(const DataSpec& s, int rank, const void* recv, size_t count, Sink* k) {
  size_t wrong = 0;
  for (int r = 0; r < s.nranks; ++r) {
    wrong += compare(s, at(recv, r * count, s.dtype), rank * count, count, [&](size_t i) { return input(s, r, i); }, k);
  }
  return wrong;
}

// Rank-1's input (ring neighbour exchange).
size_t from_left(const DataSpec& s, int rank, const void* recv, size_t count, Sink* k) {
  const int left = (rank + s.nranks - 1) % s.nranks;
  return compare(s, recv, 0, count, [&](size_t i) { return input(s, left, i); }, k);
}

// Part r is the part of rank r's packed input meant for `rank`.
size_t exchanged_per_peer(const DataSpec& s, int rank, const void* recv, size_t, Sink* k) {
  const CountMatrix& m = *s.counts;
  size_t wrong = 0, offset = 0;
  for (int r = 0; r < s.nranks; ++r) {
    size_t first = 0;
    for (int p = 0; p < rank; ++p) first += m.at(r, p);
    wrong += compare(s, at(recv, offset, s.dtype), first, m.at(r, rank), [&](size_t i) { return input(s, r, i); }, k);
    offset += m.at(r, rank);
  }
  return wrong;
}

size_t nothing(const DataSpec&, int, const void*, size_t, Sink*) { return 0; }

struct Expectation {
  Collective collective;
  size_t (*count_wrong)(const DataSpec& s, int rank, const void* recv, size_t count, Sink* sink);
};

constexpr std::array<Expectation, kNumCollectives> kExpected = {{
    {Collective::AllReduce, reduced},
    {Collective::AllGather, gathered},
    {Collective::ReduceScatter, reduced_block},
    {Collective::Broadcast, broadcast},
    {Collective::Reduce, reduced_at_root},
    {Collective::AllToAll, exchanged},
    {Collective::Barrier, nothing},  // checked by barrier_check.h
    {Collective::Gather, gathered_at_root},
    {Collective::Scatter, scattered},
    {Collective::SendRecv, from_left},
    {Collective::AllToAllV, exchanged_per_peer},
}};
static_assert(covers_every_collective(kExpected), "one expected-value function per collective, in enum order");

}  // namespace

size_t count_wrong(const DataSpec& s, int rank, const void* recv, size_t count) {
  return kExpected[static_cast<size_t>(s.collective)].count_wrong(s, rank, recv, count, nullptr);
}

size_t find_wrong(const DataSpec& s, int rank, const void* recv, size_t count, std::vector<ElementMismatch>* first,
                  size_t max) {
  Sink sink{static_cast<const char*>(recv), first, max};
  return kExpected[static_cast<size_t>(s.collective)].count_wrong(s, rank, recv, count, &sink);
}

}  // namespace smddp::bench
