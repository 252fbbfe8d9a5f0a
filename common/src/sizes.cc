#include "smddp/common/sizes.h"

#include <algorithm>

#include "smddp/common/strings.h"
#include "smddp/error.h"

namespace smddp::common {
namespace {

// __extension__: -Wpedantic accepts the GCC/Clang 128-bit type this way.
__extension__ typedef unsigned __int128 u128;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// "" and "B" are bytes; a prefix letter in either case, alone or followed
// by "B" or "iB", is a power of 1024. false for anything else ("b" would be
// bits, so "1Kb" is refused rather than guessed).
bool unit_shift(std::string_view unit, unsigned* shift) {
  *shift = 0;
  if (unit.empty() || unit == "B") return true;
  static constexpr std::string_view kLetters = "KMGTPE";
  const size_t at = kLetters.find(to_upper(unit.substr(0, 1)));
  const std::string_view rest = unit.substr(1);
  if (at == std::string_view::npos || !(rest.empty() || rest == "B" || rest == "iB")) return false;
  *shift = 10 * static_cast<unsigned>(at + 1);
  return true;
}

}  // namespace

std::optional<uint64_t> parse_size(std::string_view text, std::string* why) {
  auto refuse = [why](std::string reason) -> std::optional<uint64_t> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  constexpr const char* kTooLarge = "more than 2^63-1 bytes";
  constexpr const char* kFraction = "not a whole number of bytes";
  text = trim(text);
  // The forms strtod and nccl-tests' sscanf("%lf") would take, named.
  if (text.empty()) return refuse("empty");
  if (text[0] == '-') return refuse("negative");
  if (text[0] == '+') return refuse("signed");
  if (text.size() > 1 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) return refuse("hexadecimal");
  if (const std::string head = to_lower(text.substr(0, 3)); head == "nan" || head == "inf") return refuse("not a number");
  size_t i = 0;
  // Integer arithmetic throughout, so 9223372036854775807 stays exact.
  u128 mantissa = 0;
  unsigned fraction_digits = 0;
  bool digits = false, point = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !point) {
      point = true;
      continue;
    }
    if (!is_digit(c)) break;
    digits = true;
    if (mantissa > static_cast<u128>(kMaxSize) * 10) return refuse(kTooLarge);
    mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
    if (point && ++fraction_digits > 18) return refuse("more than 18 decimals");
  }
  if (!digits) return refuse("no number");  // "K", "."
  // An exponent as nccl-tests' %lf reads it ("1e3", "2.5E+6"): e followed by
  // a digit or a signed digit. "7E" and "7EB" stay exbibytes.
  int exponent = -static_cast<int>(fraction_digits);
  if (i + 1 < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    size_t j = i + 1;
    const bool negative = text[j] == '-';
    if (text[j] == '+' || text[j] == '-') ++j;
    if (j < text.size() && is_digit(text[j])) {
      int e = 0;
      // Saturated: 1e99999 is far past the limit, 0e99999 still 0.
      for (; j < text.size() && is_digit(text[j]); ++j) e = std::min(e * 10 + (text[j] - '0'), 100000);
      exponent += negative ? -e : e;
      i = j;
    }
  }
  // Blanks may separate the number and its unit ("64 MB", as nccl-tests reads it).
  const std::string_view unit = trim(text.substr(i));
  unsigned shift = 0;
  if (!unit_shift(unit, &shift)) return refuse("unknown unit '" + std::string(unit) + "'");
  if (mantissa == 0) return 0;
  for (; exponent > 0; --exponent) {
    mantissa *= 10;
    if (mantissa > static_cast<u128>(kMaxSize)) return refuse(kTooLarge);
  }
  const u128 scaled = mantissa << shift;
  if ((scaled >> shift) != mantissa) return refuse(kTooLarge);     // past 128 bits
  if (exponent < -38) return refuse(kFraction);                     // the mantissa has fewer digits
  u128 divisor = 1;
  for (; exponent < 0; ++exponent) divisor *= 10;
  if (scaled % divisor != 0) return refuse(kFraction);
  const u128 bytes = scaled / divisor;
  if (bytes > kMaxSize) return refuse(kTooLarge);
  return static_cast<uint64_t>(bytes);
}

uint64_t parse_size_or_throw(std::string_view text, std::string_view what) {
  std::string why;
  if (auto v = parse_size(text, &why)) return *v;
  throw UsageError(std::string(what) + " '" + std::string(text) + "': " + why + "; expected " +
                   std::string(kSizeExamples));
}

}  // namespace smddp::common
