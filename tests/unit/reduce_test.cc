// Host reduction kernels against a scalar reference, on every ISA path the
// CPU runs and through the public API.
//
// The reference shares no code with the kernels: integers are combined in
// uint64_t (which wraps the same way modulo 2^N), float16 is decoded with
// ldexp, and narrowing to float16/bfloat16/fp8 picks the nearest entry of a
// table of every representable magnitude (ties to the even encoding; fp8
// saturates at its largest finite value, as CUDA's __NV_SATFINITE does). It follows
// the documented order of operations, so results must match bit for bit;
// the only freedom allowed is which NaN a NaN result is.
#include "smddp/reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/kernels.h"
#include "smddp/error.h"
#include "smddp/types.h"

namespace smddp {

// Readable test parameters in gtest's messages (found by ADL, so not in the
// unnamed namespace).
void PrintTo(DataType t, std::ostream* os) { *os << to_string(t); }
void PrintTo(ReduceOp op, std::ostream* os) { *os << to_string(op); }

namespace {

using kernels::KernelTable;

// A new seed every run, the same for the whole process: printed once, and
// in every failure's trace; SMDDP_TEST_SEED=N replays a run.
uint64_t run_seed() {
  static const uint64_t seed = [] {
    const char* env = std::getenv("SMDDP_TEST_SEED");
    const uint64_t s = env && *env ? std::strtoull(env, nullptr, 0)
                                   : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
    std::printf("reduce_test seed %llu (SMDDP_TEST_SEED replays it)\n", static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}
constexpr int kSourceCounts[] = {1, 2, 3, 5};
// Odd sizes reach the vector tails; 4099 and 10007 span several blocks.
constexpr size_t kCounts[] = {0, 1, 7, 33, 1000, 4099, 10007};
constexpr const char* kIsaNames[] = {"avx512", "avx2", "generic"};

// ---- Reference conversions ------------------------------------------------

float ref_f16_to_float(uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  double mag = 0;
  if (exp == 0x1f) {
    mag = mant != 0 ? std::numeric_limits<double>::quiet_NaN() : INFINITY;
  } else if (exp == 0) {
    mag = std::ldexp(mant, -24);
  } else {
    mag = std::ldexp(1024 + mant, exp - 25);
  }
  return static_cast<float>((h & 0x8000) != 0 ? -mag : mag);
}

float ref_bf16_to_float(uint16_t h) {  // bfloat16 is the top half of a float
  const uint32_t bits = uint32_t{h} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Every magnitude of a 16-bit format by encoding, up to the infinity
// encoding, which stands for the next power of two (where round to nearest
// overflows).
using Magnitudes = std::vector<double>;

Magnitudes magnitudes(float (*decode)(uint16_t), uint16_t inf_code, double beyond_max) {
  Magnitudes mags;
  for (uint32_t k = 0; k < inf_code; ++k) mags.push_back(decode(static_cast<uint16_t>(k)));
  mags.push_back(beyond_max);
  return mags;
}

const Magnitudes& f16_mags() {
  static const Magnitudes m = magnitudes(ref_f16_to_float, 0x7c00, 65536.0);
  return m;
}
const Magnitudes& bf16_mags() {
  static const Magnitudes m = magnitudes(ref_bf16_to_float, 0x7f80, std::ldexp(1.0, 128));
  return m;
}

uint16_t ref_narrow(const Magnitudes& mags, float f) {
  if (std::isnan(f)) return 0x7fff;  // a NaN in both formats
  const auto sign = static_cast<uint16_t>(std::signbit(f) ? 0x8000 : 0);
  const double mag = std::fabs(static_cast<double>(f));
  size_t k = std::lower_bound(mags.begin(), mags.end(), mag) - mags.begin();
  if (k == mags.size()) {
    k = mags.size() - 1;  // beyond every finite value: infinity
  } else if (mags[k] != mag) {
    const double below = mag - mags[k - 1];
    const double above = mags[k] - mag;
    if (below < above || (below == above && (k - 1) % 2 == 0)) --k;
  }
  return static_cast<uint16_t>(sign | k);
}

bool half_is_nan(uint16_t h, uint16_t inf_code) { return (h & 0x7fff) > inf_code; }

// fp8: mantissa bits, bias, the largest finite code, infinities or not.
struct Fp8Spec {
  int man, bias;
  uint8_t max_code;
  bool has_inf;
};
constexpr Fp8Spec kE4M3{3, 7, 0x7e, false};
constexpr Fp8Spec kE5M2{2, 15, 0x7b, true};

bool fp8_is_nan(const Fp8Spec& f, uint8_t c) { return (c & 0x7f) > (f.has_inf ? 0x7c : 0x7e); }

float ref_fp8_to_float(const Fp8Spec& f, uint8_t c) {
  const int exp = (c & 0x7f) >> f.man;
  const int mant = c & ((1 << f.man) - 1);
  double mag = 0;
  if (fp8_is_nan(f, c)) {
    mag = std::numeric_limits<double>::quiet_NaN();
  } else if (f.has_inf && (c & 0x7f) == 0x7c) {
    mag = INFINITY;
  } else if (exp == 0) {
    mag = std::ldexp(mant, 1 - f.bias - f.man);
  } else {
    mag = std::ldexp((1 << f.man) + mant, exp - f.bias - f.man);
  }
  return static_cast<float>((c & 0x80) != 0 ? -mag : mag);
}

// Nearest finite magnitude, ties to the even code; beyond the largest (and
// infinity) the largest; NaN is 0x7f.
uint8_t ref_narrow_fp8(const Fp8Spec& f, float x) {
  if (std::isnan(x)) return 0x7f;
  const auto sign = static_cast<uint8_t>(std::signbit(x) ? 0x80 : 0);
  const double mag = std::fabs(static_cast<double>(x));
  static const auto table = [](const Fp8Spec& spec) {
    std::vector<double> m;
    for (int k = 0; k <= spec.max_code; ++k) m.push_back(ref_fp8_to_float(spec, static_cast<uint8_t>(k)));
    return m;
  };
  static const std::vector<double> e4m3 = table(kE4M3), e5m2 = table(kE5M2);
  const std::vector<double>& mags = f.has_inf ? e5m2 : e4m3;
  if (mag >= mags.back()) return static_cast<uint8_t>(sign | f.max_code);
  size_t k = std::lower_bound(mags.begin(), mags.end(), mag) - mags.begin();
  if (mags[k] != mag) {
    const double below = mag - mags[k - 1];
    const double above = mags[k] - mag;
    if (below < above || (below == above && (k - 1) % 2 == 0)) --k;
  }
  return static_cast<uint8_t>(sign | k);
}

// ---- Element types ----------------------------------------------------------

// Store: the element in memory; Compute: what the reference combines in.
template <typename S, typename C, DataType D>
struct Elem {
  using Store = S;
  using Compute = C;
  static constexpr DataType kType = D;
};
using F16 = Elem<uint16_t, float, DataType::Float16>;
using BF16 = Elem<uint16_t, float, DataType::Bfloat16>;
using F32 = Elem<float, float, DataType::Float32>;
using E4M3 = Elem<uint8_t, float, DataType::Float8E4M3>;
using E5M2 = Elem<uint8_t, float, DataType::Float8E5M2>;

template <typename E>
constexpr bool kIsFp8 = E::kType == DataType::Float8E4M3 || E::kType == DataType::Float8E5M2;
template <typename E>
constexpr bool kIsNarrowFloat = E::kType == DataType::Float16 || E::kType == DataType::Bfloat16 || kIsFp8<E>;
template <typename E>
constexpr const Fp8Spec& fp8_spec() {
  return E::kType == DataType::Float8E4M3 ? kE4M3 : kE5M2;
}

template <typename E>
typename E::Compute widen(typename E::Store s) {
  if constexpr (E::kType == DataType::Float16)
    return ref_f16_to_float(s);
  else if constexpr (E::kType == DataType::Bfloat16)
    return ref_bf16_to_float(s);
  else if constexpr (kIsFp8<E>)
    return ref_fp8_to_float(fp8_spec<E>(), s);
  else
    return s;
}

template <typename E>
typename E::Store narrow(typename E::Compute c) {
  if constexpr (E::kType == DataType::Float16)
    return ref_narrow(f16_mags(), c);
  else if constexpr (E::kType == DataType::Bfloat16)
    return ref_narrow(bf16_mags(), c);
  else if constexpr (kIsFp8<E>)
    return ref_narrow_fp8(fp8_spec<E>(), c);
  else
    return c;
}

template <typename C>
C ref_op(ReduceOp op, C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    const auto wa = static_cast<uint64_t>(a), wb = static_cast<uint64_t>(b);
    switch (op) {
      case ReduceOp::Prod:
        return static_cast<C>(wa * wb);
      case ReduceOp::Min:
        return std::min(a, b);
      case ReduceOp::Max:
        return std::max(a, b);
      default:
        return static_cast<C>(wa + wb);
    }
  } else {
    const bool any_nan = std::isnan(a) || std::isnan(b);
    switch (op) {
      case ReduceOp::Prod:
        return a * b;
      case ReduceOp::Min:
        return any_nan ? NAN : (a < b ? a : b);  // ties: second
      case ReduceOp::Max:
        return any_nan ? NAN : (a > b ? a : b);
      default:
        return a + b;
    }
  }
}

template <typename E>
typename E::Store ref_divide(typename E::Store v, int divisor) {
  using S = typename E::Store;
  if constexpr (kIsNarrowFloat<E>) {
    return narrow<E>(widen<E>(v) / static_cast<float>(divisor));
  } else if constexpr (std::is_floating_point_v<S>) {
    return v / static_cast<S>(divisor);
  } else if constexpr (std::is_signed_v<S>) {
    return static_cast<S>(static_cast<long long>(v) / divisor);
  } else {
    return static_cast<S>(static_cast<unsigned long long>(v) / static_cast<unsigned>(divisor));
  }
}

template <typename E>
bool same(typename E::Store a, typename E::Store b) {
  using S = typename E::Store;
  if constexpr (E::kType == DataType::Float16) {
    return a == b || (half_is_nan(a, 0x7c00) && half_is_nan(b, 0x7c00));
  } else if constexpr (E::kType == DataType::Bfloat16) {
    return a == b || (half_is_nan(a, 0x7f80) && half_is_nan(b, 0x7f80));
  } else if constexpr (kIsFp8<E>) {  // one source is a copy, which keeps a NaN's sign
    return a == b || (fp8_is_nan(fp8_spec<E>(), a) && fp8_is_nan(fp8_spec<E>(), b));
  } else if constexpr (std::is_floating_point_v<S>) {
    return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
  } else {
    return a == b;
  }
}

// Integers: extremes often (to wrap), else random bits. Floats: specials
// (NaN, +-inf, subnormal, -0, max) often, else values of similar magnitude
// so sums really round. 16-bit: also arbitrary bit patterns.
template <typename E>
typename E::Store random_value(std::mt19937_64& rng) {
  using S = typename E::Store;
  using L = std::numeric_limits<S>;
  const uint64_t bits = rng();
  const unsigned pick = bits % 16;
  if constexpr (kIsFp8<E>) {
    // Any encoding (NaN, infinity, subnormals, the largest) now and then,
    // else magnitudes near 1 so that sums round.
    const auto r = static_cast<uint8_t>(bits >> 16);
    if (pick < 3) return r;
    const int exp = fp8_spec<E>().bias - 2 + static_cast<int>((bits >> 40) % 5);
    return static_cast<uint8_t>((r & (0x80 | ((1 << fp8_spec<E>().man) - 1))) | (exp << fp8_spec<E>().man));
  } else if constexpr (E::kType == DataType::Float16 || E::kType == DataType::Bfloat16) {
    const bool f16 = E::kType == DataType::Float16;
    const uint16_t r = static_cast<uint16_t>(bits >> 16);
    const uint16_t mant_mask = f16 ? 0x3ff : 0x7f;
    const int mant_bits = f16 ? 10 : 7;
    const int bias = f16 ? 15 : 127;
    if (pick < 3) return r;                                                 // any encoding
    if (pick == 3) return static_cast<uint16_t>(r & (0x8000 | mant_mask));  // subnormal
    if (pick == 4) return static_cast<uint16_t>((r & 0x8000) | (f16 ? 0x7c00 : 0x7f80));  // inf
    const int exp = bias - 4 + static_cast<int>((bits >> 40) % 9);
    return static_cast<uint16_t>((r & (0x8000 | mant_mask)) | (exp << mant_bits));
  } else if constexpr (std::is_floating_point_v<S>) {
    const S specials[] = {L::quiet_NaN(),   L::infinity(), -L::infinity(), L::denorm_min() * 3,
                          -L::denorm_min(), S(-0.0),       L::max(),       L::min()};
    if (pick < 2) return specials[(bits >> 8) % 8];
    const double unit = static_cast<double>(bits >> 11) * 0x1p-53;  // [0, 1)
    return static_cast<S>(std::ldexp(unit * 4 - 2, static_cast<int>((bits >> 4) % 9) - 4));
  } else {
    const S specials[] = {L::min(), L::max(), S(-1), S(1), S(0)};
    if (pick < 4) return specials[(bits >> 8) % 5];
    return static_cast<S>(bits >> 3);
  }
}

// ---- Paths --------------------------------------------------------------------

// Every ISA table the CPU runs, then the public API (table == nullptr).
struct Path {
  std::string name;
  const KernelTable* table;
};

std::vector<Path> paths() {
  std::vector<Path> out;
  for (const char* isa : kIsaNames) {
    if (const KernelTable* t = kernels::kernel_table(isa)) out.push_back({isa, t});
  }
  out.push_back({"public", nullptr});
  return out;
}

void run_reduce(const Path& p, void* dst, const void* const* srcs, int nsrc, size_t count,
                DataType dt, ReduceOp op) {
  if (p.table == nullptr) return reduce(dst, srcs, nsrc, count, dt, op);
  p.table->reduce[static_cast<int>(dt)][static_cast<int>(op)](dst, srcs, nsrc, count);
}

void run_divide(const Path& p, void* dst, size_t count, DataType dt, int divisor) {
  if (p.table == nullptr) return divide(dst, count, dt, divisor);
  p.table->divide[static_cast<int>(dt)](dst, count, divisor);
}

// Expects got[0, want.size()) == want, reporting the first difference.
template <typename E>
void expect_same(const std::vector<typename E::Store>& want, const typename E::Store* got,
                 const std::string& what) {
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!same<E>(want[i], got[i]) && wrong++ == 0) first = i;
  }
  EXPECT_EQ(wrong, 0u) << what << ": first at " << first << " of " << want.size() << ": want "
                       << +want[first] << ", got " << +got[first];
}

template <typename E>
void check_reduce(ReduceOp op) {
  using S = typename E::Store;
  const uint64_t seed = run_seed() + static_cast<uint64_t>(E::kType) * 16 + static_cast<uint64_t>(op);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const S guard = random_value<E>(rng);
  for (int nsrc : kSourceCounts) {
    for (size_t count : kCounts) {
      // count + 1 elements so a layout may start one element in (misaligned).
      std::vector<std::vector<S>> src(nsrc, std::vector<S>(count + 1));
      for (auto& s : src) std::generate(s.begin(), s.end(), [&] { return random_value<E>(rng); });
      for (size_t off : {size_t{0}, size_t{1}}) {
        std::vector<S> want(count);
        for (size_t i = 0; i < count; ++i) {
          typename E::Compute acc = widen<E>(src[0][off + i]);
          for (int s = 1; s < nsrc; ++s) acc = ref_op(op, acc, widen<E>(src[s][off + i]));
          // One source is a copy: nothing rounds (fp8 infinities stay).
          want[i] = nsrc == 1 ? src[0][off + i] : narrow<E>(acc);
        }
        for (bool in_place : {false, true}) {
          for (const Path& path : paths()) {
            std::vector<S> out = in_place ? src[0] : std::vector<S>(count + 1, guard);
            std::vector<const void*> ptrs;
            for (const auto& s : src) ptrs.push_back(s.data() + off);
            if (in_place) ptrs[0] = out.data() + off;
            run_reduce(path, out.data() + off, ptrs.data(), nsrc, count, E::kType, op);
            const std::string what = path.name + " nsrc " + std::to_string(nsrc) + " count " +
                                     std::to_string(count) + " offset " + std::to_string(off) +
                                     (in_place ? " in place" : "");
            expect_same<E>(want, out.data() + off, what);
            const S outside = in_place ? src[0][off == 0 ? count : 0] : guard;
            EXPECT_TRUE(same<E>(out[off == 0 ? count : 0], outside)) << what << ": wrote outside";
          }
          if (nsrc == 2) {  // reduce_into(dst, src) == reduce({dst, src})
            std::vector<S> out = src[0];
            reduce_into(out.data() + off, src[1].data() + off, count, E::kType, op);
            expect_same<E>(want, out.data() + off, "reduce_into count " + std::to_string(count));
          }
        }
      }
    }
  }
}

template <typename E>
void check_divide() {
  using S = typename E::Store;
  const uint64_t seed = run_seed() + 1000 + static_cast<uint64_t>(E::kType);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int divisor : {1, 2, 3, 7, 1000}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{33}, size_t{4099}}) {
      std::vector<S> values(count + 1);
      std::generate(values.begin(), values.end(), [&] { return random_value<E>(rng); });
      std::vector<S> want(count);
      for (size_t i = 0; i < count; ++i) want[i] = ref_divide<E>(values[i + 1], divisor);
      for (const Path& path : paths()) {
        std::vector<S> out = values;
        run_divide(path, out.data() + 1, count, E::kType, divisor);
        expect_same<E>(
            want, out.data() + 1,
            path.name + " / " + std::to_string(divisor) + " count " + std::to_string(count));
        EXPECT_TRUE(same<E>(out[0], values[0])) << path.name << ": wrote outside";
      }
    }
  }
}

template <typename F>
void with_elem(DataType dt, F&& f) {
  switch (dt) {
    case DataType::Int8:
      return f(Elem<int8_t, int8_t, DataType::Int8>{});
    case DataType::Uint8:
      return f(Elem<uint8_t, uint8_t, DataType::Uint8>{});
    case DataType::Int32:
      return f(Elem<int32_t, int32_t, DataType::Int32>{});
    case DataType::Uint32:
      return f(Elem<uint32_t, uint32_t, DataType::Uint32>{});
    case DataType::Int64:
      return f(Elem<int64_t, int64_t, DataType::Int64>{});
    case DataType::Uint64:
      return f(Elem<uint64_t, uint64_t, DataType::Uint64>{});
    case DataType::Float16:
      return f(F16{});
    case DataType::Bfloat16:
      return f(BF16{});
    case DataType::Float32:
      return f(F32{});
    case DataType::Float64:
      return f(Elem<double, double, DataType::Float64>{});
    case DataType::Float8E4M3:
      return f(E4M3{});
    case DataType::Float8E5M2:
      return f(E5M2{});
  }
  FAIL() << "unknown dtype";
}

// ---- Tests --------------------------------------------------------------------

class ReduceTest : public testing::TestWithParam<std::tuple<DataType, ReduceOp>> {};

TEST_P(ReduceTest, MatchesReferenceOnEveryPath) {
  const auto [dtype, op] = GetParam();
  with_elem(dtype, [op = op](auto elem) { check_reduce<decltype(elem)>(op); });
}

INSTANTIATE_TEST_SUITE_P(AllTypesAndOps, ReduceTest,
                         testing::Combine(testing::ValuesIn(all_dtypes().begin(),
                                                            all_dtypes().end()),
                                          testing::ValuesIn(all_ops().begin(), all_ops().end())),
                         [](const auto& info) {
                           return std::string(to_string(std::get<0>(info.param))) + "_" +
                                  std::string(to_string(std::get<1>(info.param)));
                         });

class DivideTest : public testing::TestWithParam<DataType> {};

TEST_P(DivideTest, MatchesReferenceOnEveryPath) {
  with_elem(GetParam(), [](auto elem) { check_divide<decltype(elem)>(); });
}

INSTANTIATE_TEST_SUITE_P(AllTypes, DivideTest,
                         testing::ValuesIn(all_dtypes().begin(), all_dtypes().end()),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// Conversions: every path against the reference (values) and against the
// portable path (bits, NaN payloads included), over every 16-bit encoding,
// every rounding midpoint and its neighbours, and random float bit patterns.
std::vector<float> narrowing_inputs(const Magnitudes& mags, std::mt19937_64& rng) {
  std::vector<float> in = {NAN,
                           INFINITY,
                           -INFINITY,
                           std::numeric_limits<float>::max(),
                           std::numeric_limits<float>::denorm_min(),
                           0.0f,
                           -0.0f};
  for (size_t k = 0; k + 1 < mags.size(); ++k) {
    const auto mid = static_cast<float>((mags[k] + mags[k + 1]) / 2);  // exact in float
    for (float x : {static_cast<float>(mags[k]), mid, std::nextafter(mid, 0.0f),
                    std::nextafter(mid, INFINITY)}) {
      in.push_back(x);
      in.push_back(-x);
    }
  }
  for (int i = 0; i < (1 << 18); ++i) {
    const auto bits = static_cast<uint32_t>(rng());
    float f;
    std::memcpy(&f, &bits, sizeof f);
    in.push_back(f);
  }
  return in;
}

template <typename E>
void check_conversions(kernels::WidenFn KernelTable::*widen_fn,
                       kernels::NarrowFn KernelTable::*narrow_fn, const Magnitudes& mags,
                       std::mt19937_64& rng) {
  std::vector<uint16_t> encodings(65536);
  for (size_t i = 0; i < encodings.size(); ++i) encodings[i] = static_cast<uint16_t>(i);
  const std::vector<float> floats = narrowing_inputs(mags, rng);
  std::vector<float> want_widened(encodings.size()), portable_widened(encodings.size());
  std::vector<uint16_t> want_narrowed(floats.size()), portable_narrowed(floats.size());
  std::transform(encodings.begin(), encodings.end(), want_widened.begin(), widen<E>);
  std::transform(floats.begin(), floats.end(), want_narrowed.begin(), narrow<E>);
  const KernelTable& portable = kernels::generic::kTable;
  (portable.*widen_fn)(encodings.data(), portable_widened.data(), encodings.size());
  (portable.*narrow_fn)(floats.data(), portable_narrowed.data(), floats.size());
  for (const Path& path : paths()) {
    if (path.table == nullptr) continue;
    const std::string what = std::string(to_string(E::kType)) + " on " + path.name;
    std::vector<float> widened(encodings.size());
    std::vector<uint16_t> narrowed(floats.size());
    (path.table->*widen_fn)(encodings.data(), widened.data(), encodings.size());
    (path.table->*narrow_fn)(floats.data(), narrowed.data(), floats.size());
    expect_same<F32>(want_widened, widened.data(), what + " widen");
    expect_same<E>(want_narrowed, narrowed.data(), what + " narrow");
    EXPECT_EQ(std::memcmp(widened.data(), portable_widened.data(), widened.size() * sizeof(float)),
              0)
        << what << ": widening differs in bits from the portable path";
    EXPECT_EQ(narrowed, portable_narrowed) << what << ": narrowing differs from the portable path";
  }
}

TEST(ReduceConversions, EveryPathMatchesReferenceAndPortableBits) {
  SCOPED_TRACE("seed " + std::to_string(run_seed()));
  std::mt19937_64 rng(run_seed());
  check_conversions<F16>(&KernelTable::f16_to_float, &KernelTable::float_to_f16, f16_mags(), rng);
  check_conversions<BF16>(&KernelTable::bf16_to_float, &KernelTable::float_to_bf16, bf16_mags(),
                          rng);
}

// fp8: every path against the reference and the portable path: all 256
// codes widened, every midpoint and neighbour plus random floats narrowed.
template <typename E>
void check_fp8_conversions(kernels::Widen8Fn KernelTable::*widen_fn, kernels::Narrow8Fn KernelTable::*narrow_fn,
                           std::mt19937_64& rng) {
  std::vector<uint8_t> codes(256);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>(i);
  Magnitudes mags;
  for (int k = 0; k <= fp8_spec<E>().max_code; ++k) mags.push_back(widen<E>(static_cast<uint8_t>(k)));
  mags.push_back(mags.back() * 2);
  const std::vector<float> floats = narrowing_inputs(mags, rng);
  std::vector<float> want_widened(codes.size());
  std::vector<uint8_t> want_narrowed(floats.size());
  std::transform(codes.begin(), codes.end(), want_widened.begin(), widen<E>);
  std::transform(floats.begin(), floats.end(), want_narrowed.begin(), narrow<E>);
  for (const Path& path : paths()) {
    if (path.table == nullptr) continue;
    const std::string what = std::string(to_string(E::kType)) + " on " + path.name;
    std::vector<float> widened(codes.size());
    std::vector<uint8_t> narrowed(floats.size());
    (path.table->*widen_fn)(codes.data(), widened.data(), codes.size());
    (path.table->*narrow_fn)(floats.data(), narrowed.data(), floats.size());
    expect_same<F32>(want_widened, widened.data(), what + " widen");
    expect_same<E>(want_narrowed, narrowed.data(), what + " narrow");
    // Round trip: every code but NaN (to 0x7f) and E5M2's infinities (to
    // the largest finite value, saturation) comes back as itself.
    std::vector<uint8_t> back(codes.size());
    (path.table->*narrow_fn)(widened.data(), back.data(), codes.size());
    for (int c = 0; c < 256; ++c) {
      const auto code = static_cast<uint8_t>(c);
      uint8_t want = code;
      if (fp8_is_nan(fp8_spec<E>(), code)) want = 0x7f;
      if (fp8_spec<E>().has_inf && (c & 0x7f) == 0x7c) want = static_cast<uint8_t>((c & 0x80) | 0x7b);
      EXPECT_EQ(+back[c], +want) << what << " round trip of code " << c;
    }
  }
}

TEST(ReduceConversions, Fp8EveryPathMatchesReference) {
  SCOPED_TRACE("seed " + std::to_string(run_seed()));
  std::mt19937_64 rng(run_seed());
  check_fp8_conversions<E4M3>(&KernelTable::e4m3_to_float, &KernelTable::float_to_e4m3, rng);
  check_fp8_conversions<E5M2>(&KernelTable::e5m2_to_float, &KernelTable::float_to_e5m2, rng);
}

// Known values, written out (CUDA's __nv_cvt_float_to_fp8 with
// __NV_SATFINITE gives these bits): nearest even, saturation, NaN.
TEST(ReduceConversions, Fp8KnownValues) {
  const KernelTable& t = kernels::generic::kTable;
  const auto e4m3 = [&](float f) {
    uint8_t c = 0;
    t.float_to_e4m3(&f, &c, 1);
    return +c;
  };
  const auto e5m2 = [&](float f) {
    uint8_t c = 0;
    t.float_to_e5m2(&f, &c, 1);
    return +c;
  };
  EXPECT_EQ(e4m3(1.0f), 0x38);
  EXPECT_EQ(e4m3(1.0625f), 0x38);  // midpoint of 1 and 1.125: the even one
  EXPECT_EQ(e4m3(1.1875f), 0x3a);  // midpoint of 1.125 and 1.25: 1.25
  EXPECT_EQ(e4m3(std::nextafter(1.0625f, 2.0f)), 0x39);
  EXPECT_EQ(e4m3(-2.0f), 0xc0);
  EXPECT_EQ(e4m3(448.0f), 0x7e);
  EXPECT_EQ(e4m3(464.0f), 0x7e);  // the midpoint above the largest
  EXPECT_EQ(e4m3(1e6f), 0x7e);
  EXPECT_EQ(e4m3(INFINITY), 0x7e);  // saturates: E4M3 has no infinity
  EXPECT_EQ(e4m3(-INFINITY), 0xfe);
  EXPECT_EQ(e4m3(NAN), 0x7f);
  EXPECT_EQ(e4m3(-NAN), 0x7f);
  EXPECT_EQ(e4m3(0x1p-6f), 0x08);    // smallest normal
  EXPECT_EQ(e4m3(0x1p-9f), 0x01);    // smallest subnormal
  EXPECT_EQ(e4m3(0x1p-10f), 0x00);   // half of it: ties to even, zero
  EXPECT_EQ(e4m3(0x1.8p-10f), 0x01);
  EXPECT_EQ(e4m3(0x1.8p-9f), 0x02);  // 1.5 steps: even, 2
  EXPECT_EQ(e4m3(-0x1p-12f), 0x80);  // underflow keeps the sign
  EXPECT_EQ(e5m2(1.0f), 0x3c);
  EXPECT_EQ(e5m2(1.125f), 0x3c);  // midpoint of 1 and 1.25
  EXPECT_EQ(e5m2(1.375f), 0x3e);  // midpoint of 1.25 and 1.5
  EXPECT_EQ(e5m2(57344.0f), 0x7b);
  EXPECT_EQ(e5m2(61440.0f), 0x7b);
  EXPECT_EQ(e5m2(INFINITY), 0x7b);  // __NV_SATFINITE: infinity saturates too
  EXPECT_EQ(e5m2(-INFINITY), 0xfb);
  EXPECT_EQ(e5m2(NAN), 0x7f);
  EXPECT_EQ(e5m2(0x1p-16f), 0x01);
  EXPECT_EQ(e5m2(0x1p-17f), 0x00);
  EXPECT_EQ(e5m2(0x1p-14f), 0x04);
  float f[6];
  const uint8_t codes[6] = {0x7e, 0xfe, 0x7f, 0x01, 0x08, 0x00};
  t.e4m3_to_float(codes, f, 6);
  EXPECT_EQ(f[0], 448.0f);
  EXPECT_EQ(f[1], -448.0f);
  EXPECT_TRUE(std::isnan(f[2]));
  EXPECT_EQ(f[3], 0x1p-9f);
  EXPECT_EQ(f[4], 0x1p-6f);
  EXPECT_EQ(f[5], 0.0f);
  const uint8_t codes5[6] = {0x7b, 0x7c, 0xfc, 0x7d, 0x01, 0x3c};
  t.e5m2_to_float(codes5, f, 6);
  EXPECT_EQ(f[0], 57344.0f);
  EXPECT_EQ(f[1], INFINITY);
  EXPECT_EQ(f[2], -INFINITY);
  EXPECT_TRUE(std::isnan(f[3]));
  EXPECT_EQ(f[4], 0x1p-16f);
  EXPECT_EQ(f[5], 1.0f);
}

// A reduction that saturates and one that makes NaN, through the API.
TEST(ReduceFp8, SaturatesAndPropagatesNan) {
  const uint8_t big[2] = {0x7e, 0x7e};  // 448 + 448 = 896: 448
  uint8_t out[2] = {};
  const void* srcs[2] = {big, big};
  reduce(out, srcs, 2, 2, DataType::Float8E4M3, ReduceOp::Sum);
  EXPECT_EQ(+out[0], 0x7e);
  const uint8_t inf[1] = {0x7c}, minus_inf[1] = {0xfc};
  const void* opposite[2] = {inf, minus_inf};
  reduce(out, opposite, 2, 1, DataType::Float8E5M2, ReduceOp::Sum);  // inf - inf
  EXPECT_EQ(+out[0], 0x7f);
  const uint8_t one[1] = {0x3c};
  const void* with_inf[2] = {inf, one};
  reduce(out, with_inf, 2, 1, DataType::Float8E5M2, ReduceOp::Max);  // inf, saturated
  EXPECT_EQ(+out[0], 0x7b);
}

const KernelTable* best_supported() {
  for (const char* isa : kIsaNames) {
    if (const KernelTable* t = kernels::kernel_table(isa)) return t;
  }
  return nullptr;
}

TEST(ReduceIsa, NamesTablesAndChoice) {
  const std::string_view isa = reduce_isa();
  EXPECT_TRUE(isa == "avx512" || isa == "avx2" || isa == "generic") << isa;
  ASSERT_NE(kernels::kernel_table(isa), nullptr);
  EXPECT_EQ(&kernels::active_table(), kernels::kernel_table(isa));
  EXPECT_EQ(kernels::kernel_table("generic"), &kernels::generic::kTable);
  EXPECT_EQ(kernels::kernel_table("sse9"), nullptr);
  const KernelTable* best = best_supported();
  EXPECT_EQ(&kernels::choose_table(nullptr), best);
  EXPECT_EQ(&kernels::choose_table(""), best);
  for (const char* name : kIsaNames) {
    const KernelTable* t = kernels::kernel_table(name);
    if (t == nullptr) continue;
    EXPECT_EQ(t->isa, name);
    EXPECT_EQ(&kernels::choose_table(name), t);
  }
  testing::internal::CaptureStderr();
  EXPECT_EQ(&kernels::choose_table("sse9"), best);
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("SMDDP_REDUCE_ISA=sse9"), std::string::npos) << warning;
  EXPECT_EQ(std::count(warning.begin(), warning.end(), '\n'), 1) << warning;
}

// A fresh process (threadsafe death-test style re-executes the binary), so
// the environment is read at the first use of the kernels.
TEST(ReduceIsaDeathTest, EnvironmentChoosesThePath) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("SMDDP_REDUCE_ISA", "generic", 1);
        std::exit(reduce_isa() == "generic" ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
  // An unknown path is refused (the configuration table), not replaced.
  EXPECT_EXIT(
      {
        setenv("SMDDP_REDUCE_ISA", "sse9", 1);
        try {
          (void)reduce_isa();
        } catch (const UsageError& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::exit(64);
        }
        std::exit(0);
      },
      testing::ExitedWithCode(64), "SMDDP_REDUCE_ISA='sse9': expected generic, avx2 or avx512");
}

}  // namespace
}  // namespace smddp
