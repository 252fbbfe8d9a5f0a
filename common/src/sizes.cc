#include "smddp/tools/sizes.h"

#include <cctype>

#include "smddp/error.h"

namespace smddp::tools {
namespace {

// __extension__: -Wpedantic accepts the GCC/Clang 128-bit type this way.
__extension__ typedef unsigned __int128 u128;

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// "" and "B" are bytes; a prefix letter in either case, alone or followed
// by "B" or "iB", is a power of 1024. 0 for anything else.
unsigned unit_shift(std::string_view unit, bool* ok) {
  *ok = true;
  if (unit.empty() || unit == "B") return 0;
  static constexpr std::string_view kLetters = "KMGTPE";
  const size_t at = kLetters.find(static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0]))));
  const std::string_view rest = unit.substr(1);
  if (at == std::string_view::npos || !(rest.empty() || rest == "B" || rest == "iB")) {
    *ok = false;
    return 0;
  }
  return 10 * static_cast<unsigned>(at + 1);
}

}  // namespace

std::optional<uint64_t> parse_size(std::string_view text) {
  text = trim(text);
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
    if (mantissa > static_cast<u128>(kMaxSize) * 10) return std::nullopt;  // far past the limit
    mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
    if (point && ++fraction_digits > 18) return std::nullopt;
  }
  if (!digits) return std::nullopt;  // "", "-1", "K", "."
  // An exponent as nccl-tests' %lf reads it ("1e3", "2.5E+6"): e followed by
  // a digit or a signed digit. "7E" and "7EB" stay exbibytes.
  int exponent = -static_cast<int>(fraction_digits);
  if (i + 1 < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    size_t j = i + 1;
    const bool negative = text[j] == '-';
    if (text[j] == '+' || text[j] == '-') ++j;
    if (j < text.size() && is_digit(text[j])) {
      int e = 0;
      for (; j < text.size() && is_digit(text[j]); ++j) {
        if (e > 1000) return std::nullopt;  // 1e99999: far past the limit
        e = e * 10 + (text[j] - '0');
      }
      exponent += negative ? -e : e;
      i = j;
    }
  }
  bool ok = false;
  const unsigned shift = unit_shift(trim(text.substr(i)), &ok);
  if (!ok) return std::nullopt;
  if (mantissa == 0) return 0;
  for (; exponent > 0; --exponent) {
    mantissa *= 10;
    if (mantissa > static_cast<u128>(kMaxSize)) return std::nullopt;
  }
  const u128 scaled = mantissa << shift;
  if ((scaled >> shift) != mantissa) return std::nullopt;  // past 128 bits
  if (exponent < -38) return std::nullopt;  // below a byte (the mantissa has fewer digits)
  u128 divisor = 1;
  for (; exponent < 0; ++exponent) divisor *= 10;
  if (scaled % divisor != 0) return std::nullopt;  // a fraction of a byte
  const u128 bytes = scaled / divisor;
  if (bytes > kMaxSize) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

uint64_t parse_size_or_throw(std::string_view text, std::string_view flag) {
  if (auto v = parse_size(text)) return *v;
  throw UsageError(std::string(flag) + " '" + std::string(text) +
                   "': expected a byte count like 8, 4K, 16M or 1G (see docs/bench.md#sizes)");
}

}  // namespace smddp::tools
